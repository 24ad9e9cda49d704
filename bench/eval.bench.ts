// Eval-job benchmark (issue 17). Sections (all by default; name some to run only those):
//   harbor  16 oracle trials of 4 tasks at concurrency 8: `tbrl eval` vs `harbor run -n 8` (Harbor 0.25,
//           its oracle agent and docker environment, on the same tasks converted to Harbor format) vs
//           eight separate `tbrl run` processes at a time.
//   ray     64 oracle trials: local `tbrl eval --concurrency 8` vs the same on a local 2-worker Ray cluster
//           (started for each Ray side, on TBRL_EVAL_RAY_BASE_PORT's ports; default 44000). Both sides get the
//           same untimed 3 s lead-in before their timed job (the Ray side's after its cluster start and warm-up
//           job), so neither times its job straight on the heels of the other's end (the cluster's stop, the
//           last removals); each round prints the whole machine's busy CPU-s in the job and the rate in the
//           lead-in (from /proc/stat: it counts the short-lived processes a per-process sampler misses).
//           Each job also prints its fixed costs from its trials' clocks: CLI start to the first trial, and the
//           last trial's end to the CLI's exit. TBRL_BENCH_TRACE=1 prints each side's start and end with the time
//           and the containers left.
//   resume  time from `tbrl eval --resume` to the first new trial on a 1,000-trial job directory.
// Run: npm run build && node --import tsx bench/eval.bench.ts [harbor] [ray] [resume] [--rounds N] [--no-harbor]
//   --rounds N   harbor section: N rounds of `tbrl eval` / 8 × `tbrl run` / the warm-pool settings, order rotated each
//                round, medians reported (default 2); Harbor itself runs once, after the rounds. ray section: N rounds
//                of local / Ray, the order swapped each round, medians and per-round ratios reported.
//   --no-harbor  harbor section without Harbor (also what happens when .venv/harbor is not set up).
//   --cold-cluster  ray section: time the job on the freshly started cluster without the untimed warm-up job
//                first (the method before 2026-12-03 09:00; the Jobs API's first-use set-up then lands in the job).
//   --ray-defaults  ray section: a third side each round, the cluster on Ray's own defaults (TBRL_RAY_QUIET=0: without
//                scripts/ray-local.env's settings), order rotated each round; its ratio to local printed beside.
//   --servers    ray section: a third side each round, what the two worker nodes run of ours without Ray: two
//                `eval-trial --serve --slots 4` fed the 64 trial specs from the bench (its time against local is
//                the studio's own share of the Ray side's overhead; the rest is Ray's). Order rotated each round.
//   --ray-b-env K=V,K=V  ray section: the same third side, but its cluster started with these variables over
//                scripts/ray-local.env's (an empty value clears one: `TBRL_RAY_DASHBOARD_MODULES=` = all modules),
//                to A/B one setting of the file in one run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { makeEvalTasks } from '../test/helpers/eval-fixture';
import { envList, startLocalRayCluster } from '../test/helpers/ray-cluster';
import { convertTask } from '../src/core/tasks/convert';
import { DockerSandboxProvider } from '../src/core/sandbox/provider';
import { LABEL_PID } from '../src/core/sandbox/types';
import { prepareJob } from '../src/core/eval/run-job';
import { RayJobsClient } from '../src/core/trainer/jobs';
import { TRIAL_DONE_PREFIX } from '../src/core/eval/ray-driver';
import { TRIAL_SCHEMA, computeResults, readTrials, trialDir, trialName, writeJsonAtomic, type JobResults, type TrialRecord } from '../src/core/eval/job';

const CLI = resolve('dist/cli.js');
const HARBOR = resolve('.venv/harbor/bin/harbor');
const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const rounds = Number(flag('--rounds') ?? 2);
const noHarbor = process.argv.includes('--no-harbor');
const coldCluster = process.argv.includes('--cold-cluster');
const rayBEnv = flag('--ray-b-env');
const servers = process.argv.includes('--servers');
/** A third side each round: another cluster (--ray-defaults, --ray-b-env) or the nodes' servers without Ray (--servers). */
const third = servers ? 'servers' : process.argv.includes('--ray-defaults') || rayBEnv !== undefined ? 'cluster' : undefined;
/** The third cluster's variables: Ray's defaults, or --ray-b-env's KEY=VALUE list. */
const thirdEnv: Record<string, string> = rayBEnv === undefined
  ? { TBRL_RAY_QUIET: '0' }
  : envList(rayBEnv);
const thirdName = servers
  ? 'the 2 node servers without Ray'
  : rayBEnv === undefined ? "Ray's defaults (TBRL_RAY_QUIET=0)" : `the cluster with ${rayBEnv}`;
const only = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--rounds' && all[i - 1] !== '--ray-b-env');
const want = (s: string): boolean => only.length === 0 || only.includes(s);
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-eval-bench-'));

function tbrl(args: string[], env: NodeJS.ProcessEnv = process.env): { sec: number; out: string } {
  const t = Date.now();
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env });
  if (r.status !== 0) throw new Error(`tbrl ${args.join(' ')} failed:\n${r.stderr.slice(-3000)}`);
  return { sec: (Date.now() - t) / 1000, out: r.stdout };
}

/** CPU seconds of this process's children that have ended and been waited for (`tbrl eval` runs through spawnSync). */
function reapedChildrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / 100;
}

function tbrlAsync(args: string[]): Promise<{ sec: number }> {
  const t = Date.now();
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-3000)));
    child.on('error', rej);
    child.on('exit', (code) => (code === 0 ? res({ sec: (Date.now() - t) / 1000 }) : rej(new Error(`tbrl ${args.join(' ')} failed (exit ${code}):\n${stderr}`))));
  });
}

function resultsOf(job: string): JobResults {
  return JSON.parse(readFileSync(join(job, 'results.json'), 'utf8')) as JobResults;
}

async function parallelRuns(tasks: string[], trialsPerTask: number, slots: number, tag = ''): Promise<number> {
  const queue = tasks.flatMap((t) => Array.from({ length: trialsPerTask }, (_, k) => ({ t, k })));
  const t0 = Date.now();
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      const { t, k } = item;
      await new Promise<void>((res, rej) => {
        const p = spawn(process.execPath, [CLI, 'run', t, '--policy', 'oracle', '--out', join(scratch, 'runs', `${tag}${t.split('/').pop()}-${k}`)], { stdio: 'ignore' });
        p.on('exit', (code) => (code === 0 ? res() : rej(new Error(`tbrl run ${t} exited ${code}`))));
      });
    }
  };
  await Promise.all(Array.from({ length: slots }, worker));
  return (Date.now() - t0) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** One `tbrl eval` of the 16 trials (4 tasks × 4 attempts, concurrency 8); checks all passed; returns the wall time. */
function evalJob(tasks: string[], name: string, env: NodeJS.ProcessEnv): number {
  const job = join(scratch, name);
  const t = tbrl(['eval', ...tasks, '--attempts', '4', '--concurrency', '8', '--policy', 'oracle', '--job-dir', job, '--json'], { ...process.env, ...env });
  const r = resultsOf(job);
  if (r.overall.outcomes.passed !== 16) throw new Error(`tbrl eval (${name}): expected 16 passed, got ${JSON.stringify(r.overall.outcomes)}`);
  return t.sec;
}

function row(name: string, sec: number, trials: number, baselineSec?: number, baselineName?: string): void {
  const perMin = (trials / sec) * 60;
  console.log(`| ${name} | ${sec.toFixed(1)} s, ${perMin.toFixed(1)} trials/min |${baselineSec ? ` ${baselineName} ${baselineSec.toFixed(1)} s, ${((trials / baselineSec) * 60).toFixed(1)} trials/min | **${(baselineSec / sec).toFixed(2)}x** |` : ''}`);
}

async function harborSection(): Promise<void> {
  const root = makeEvalTasks(['t1', 't2', 't3', 't4'], join(scratch, 'tb'));
  const tasks = ['t1', 't2', 't3', 't4'].map((t) => join(root, t));
  // Warm the image cache once so no contender pays for the build.
  tbrl(['run', tasks[0], '--policy', 'oracle', '--out', join(scratch, 'warm')]);

  console.log(`harbor section: load average ${loadavg()[0].toFixed(1)} at the start; ${rounds} round(s), sides alternated`);
  // Each round runs every side once, the order rotated from round to round so no side always goes first (or last) into
  // the machine's load: the default `tbrl eval`, 8 separate `tbrl run`s, and the eval with the warm sandboxes forced on
  // (TBRL_EVAL_WARM_POOL=4) and off with the deferred removals (=0), to show what the default's choice is worth.
  const sides: Array<{ name: string; run: (round: number) => Promise<number> }> = [
    { name: 'eval', run: async (r) => evalJob(tasks, `job-16-${r}`, {}) },
    { name: 'runs', run: async (r) => parallelRuns(tasks, 4, 8, `r${r}-`) },
    { name: 'pool4', run: async (r) => evalJob(tasks, `job-16-pool-${r}`, { TBRL_EVAL_WARM_POOL: '4' }) },
    { name: 'pool0', run: async (r) => evalJob(tasks, `job-16-plain-${r}`, { TBRL_EVAL_WARM_POOL: '0' }) },
  ];
  const times = new Map<string, number[]>(sides.map((x) => [x.name, []]));
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length]);
    const line: string[] = [];
    for (const side of order) {
      const l0 = loadavg()[0];
      const sec = await side.run(r);
      times.get(side.name)!.push(sec);
      line.push(`${side.name} ${sec.toFixed(1)} s (load ${l0.toFixed(1)})`);
    }
    console.log(`round ${r + 1}: ${line.join(', ')}`);
  }
  const med = (name: string): number => median(times.get(name)!);
  // Each round's eval and runs ran back to back: their ratio is less at the mercy of the load than the medians'.
  const pairs = times.get('runs')!.map((r, i) => r / times.get('eval')![i]);
  console.log(`8 × tbrl run / tbrl eval per round: ${pairs.map((x) => `${x.toFixed(2)}x`).join(', ')} (median ${median(pairs).toFixed(2)}x)`);
  const ours = { sec: med('eval') };
  const separate = med('runs');
  const poolRow = (): void => {
    row('`tbrl eval` (default: warm sandboxes only for idle cores)', ours.sec, 16, med('pool4'), '`tbrl eval` warm sandboxes forced on (`TBRL_EVAL_WARM_POOL=4`)');
    row('`tbrl eval` (default)', ours.sec, 16, med('pool0'), '`tbrl eval` without warm sandboxes or deferred removal (`TBRL_EVAL_WARM_POOL=0`)');
    console.log(`(medians of ${rounds} round(s); load average ${loadavg()[0].toFixed(1)} at the end)`);
  };
  if (noHarbor || !existsSync(HARBOR)) {
    // Harbor is not set up on every machine (see the README); the comparison with eight `tbrl run`s stands on its own.
    if (!noHarbor) console.log(`harbor: not installed at ${HARBOR}: only \`tbrl eval\` vs 8 separate \`tbrl run\` is measured; load average ${loadavg()[0].toFixed(1)}`);
    console.log('\n| 16 oracle trials, 4 tasks, concurrency 8 | measured | baseline | ratio |\n|---|---|---|---|');
    row('`tbrl eval`', ours.sec, 16, separate, '8 separate `tbrl run`');
    poolRow();
    return;
  }

  // The same tasks in Harbor's format, their stand-in base image named directly (Harbor builds with compose, offline).
  const hdir = join(scratch, 'harbor-tasks');
  for (const t of tasks) {
    const out = join(hdir, t.split('/').pop()!);
    await convertTask(t, out, 'harbor');
    for (const f of ['environment/Dockerfile', 'Dockerfile']) {
      try {
        const p = join(out, f);
        writeFileSync(p, readFileSync(p, 'utf8').replace(/^FROM\s+ghcr\.io\/laude-institute\/t-bench\/python-3-13\S*/m, 'FROM tbrl-standin/python:3'));
      } catch {
        /* not in this layout */
      }
    }
  }
  const env = { ...process.env, DOCKER_CONFIG: resolve('.venv/harbor/docker-config'), LITELLM_LOCAL_MODEL_COST_MAP: 'True', PATH: `${resolve('.venv/harbor/bin')}:${process.env.PATH}` };
  const h0 = Date.now();
  const h = spawnSync(HARBOR, ['run', '-p', hdir, '-a', 'oracle', '-n', '8', '-k', '4', '-o', join(scratch, 'harbor-jobs'), '--yes'], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const harborSec = (Date.now() - h0) / 1000;
  if (h.status !== 0) console.error(`harbor run exited ${h.status}:\n${(h.stdout + h.stderr).slice(-3000)}`);
  const hjob = readdirSync(join(scratch, 'harbor-jobs')).map((d) => join(scratch, 'harbor-jobs', d))[0];
  const hres = JSON.parse(readFileSync(join(hjob, 'result.json'), 'utf8'));
  const evals = Object.values((hres.stats?.evals ?? {}) as Record<string, { n_trials?: number; n_errors?: number; exception_stats?: Record<string, string[]> }>);
  const errors = evals.flatMap((e) => Object.entries(e.exception_stats ?? {}).map(([kind, trials]) => `${kind} × ${trials.length}`));
  console.log(`harbor: ${evals.reduce((n, e) => n + (e.n_trials ?? 0), 0)} trials scored, ${evals.reduce((n, e) => n + (e.n_errors ?? 0), 0)} errors${errors.length ? ` (${errors.join(', ')})` : ''}; load average ${loadavg()[0].toFixed(1)}`);
  console.log('\n| 16 oracle trials, 4 tasks, concurrency 8 | measured | baseline | ratio |\n|---|---|---|---|');
  row('`tbrl eval`', ours.sec, 16, harborSec, '`harbor run -n 8`');
  row('`tbrl eval`', ours.sec, 16, separate, '8 separate `tbrl run`');
  row('8 separate `tbrl run`', separate, 16, harborSec, '`harbor run -n 8`');
  poolRow();
}

/**
 * CPU seconds the whole machine has been busy (all processes and the kernel, from /proc/stat): it counts
 * what a per-process sampler misses, the many short-lived processes of a trial (docker exec, runc, sh).
 */
function machineBusyCpu(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + steal) / 100;
}

/** Waits `ms` and returns the machine's busy CPU seconds in that time. */
async function machineBusyOver(ms: number): Promise<number> {
  const c0 = machineBusyCpu();
  await new Promise((res) => setTimeout(res, ms));
  return machineBusyCpu() - c0;
}

/** TBRL_BENCH_TRACE=1: each side's start and end on stderr with the time and the containers left, to line up with a CPU monitor. */
function trace(what: string): void {
  if (process.env.TBRL_BENCH_TRACE !== '1') return;
  const containers = spawnSync('docker', ['ps', '-aq'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).length;
  console.error(`[trace ${new Date().toISOString().slice(11, 19)}] ${what}; ${containers} containers`);
}

async function raySection(): Promise<void> {
  const root = makeEvalTasks(['r1', 'r2', 'r3', 'r4'], join(scratch, 'ray-tasks'));
  const tasks = ['r1', 'r2', 'r3', 'r4'].map((t) => join(root, t));
  tbrl(['run', tasks[0], '--policy', 'oracle', '--out', join(scratch, 'warm-ray')]);
  // A job's fixed costs, from its trials' own clocks: its start (t0) to the first trial's start (on the Ray side
  // the Jobs API's supervisor, the driver and the node actors start in between) and the last trial's end to
  // its end (t1; the result's way back: on the Ray side through the job log and the dashboard's tail).
  const fixedCosts = (t0: number, t1: number, trials: TrialRecord[]): string => {
    const first = Math.min(...trials.map((t) => Date.parse(t.startedAt)));
    const last = Math.max(...trials.map((t) => Date.parse(t.endedAt)));
    return `first trial +${((first - t0) / 1000).toFixed(1)} s, last end to exit ${((t1 - last) / 1000).toFixed(1)} s`;
  };
  // Run without blocking this process, so that the Ray side's CPU sampler (a timer here) keeps sampling.
  const job = async (name: string, extra: string[] = []): Promise<{ sec: number; costs: string }> => {
    const t0 = Date.now();
    const sec = (await tbrlAsync(['eval', ...tasks, '--attempts', '16', '--concurrency', '8', '--policy', 'oracle', '--job-dir', join(scratch, name), '--json', ...extra])).sec;
    const t1 = Date.now();
    const r = resultsOf(join(scratch, name));
    if (r.overall.outcomes.passed !== 64) throw new Error(`${name}: expected 64 passed, got ${JSON.stringify(r.overall.outcomes)}`);
    return { sec, costs: fixedCosts(t0, t1, [...readTrials(join(scratch, name)).values()]) };
  };
  // The cluster runs only during the Ray side (started and stopped around it, untimed): its daemons'
  // own CPU is part of its overhead, not a load on the local side. Sides alternate from round to round.
  // CPU seconds of each side, for the account of where the Ray side's time goes on two shared cores:
  // the `tbrl eval` process (this process's reaped children) and the cluster's processes.
  const cpu: Record<'local' | 'ray' | 'third', string[]> = { local: [], ray: [], third: [] };
  const sides = {
    local: async (r: number) => {
      // The same untimed 3 s lead-in the Ray side has before its job (its idle sample), so neither side
      // starts its timed job straight on the other's heels.
      const before = await machineBusyOver(3000);
      const c0 = reapedChildrenCpu();
      const m0 = machineBusyCpu();
      const { sec, costs } = await job(`job-local-${r}`);
      cpu.local.push(`client ${(reapedChildrenCpu() - c0).toFixed(1)}, machine ${(machineBusyCpu() - m0).toFixed(1)} (${(before / 3).toFixed(2)}/s before; ${costs})`);
      return sec;
    },
    ray: (r: number) => raySide(r, 'ray'),
    // The same on a cluster with Ray's own defaults (or --ray-b-env's variables) instead of scripts/ray-local.env's
    // settings; or, with --servers, what the cluster's nodes run of ours without Ray.
    third: (r: number) => (servers ? serversSide(r) : raySide(r, 'third')),
  };
  /**
   * What the two worker nodes run of the studio's own, without Ray: two `eval-trial --serve --slots 4`
   * processes (as the node actors start them) fed the same 64 trial specs straight from here, each
   * trial handed to a server when one of its slots frees up (as the driver does). Its time against the
   * local job is the studio's share of the Ray side's overhead; the rest is Ray's.
   */
  const serversSide = async (r: number): Promise<number> => {
    const before = await machineBusyOver(3000);
    const m0 = machineBusyCpu();
    const t0 = Date.now();
    const { job: prepared } = await prepareJob({ inputs: tasks, jobDir: join(scratch, `job-servers-${r}`), run: { attempts: 16, policy: 'oracle' }, concurrency: 8 });
    const queue: string[] = [];
    for (const task of prepared.tasks) {
      for (let a = 1; a <= 16; a++) {
        const trial = trialName(task.name, a);
        const dir = trialDir(join(scratch, `job-servers-${r}`), trial);
        const spec = join(dir, '.spec.json');
        mkdirSync(dir, { recursive: true });
        writeFileSync(spec, JSON.stringify({ trial, attempt: a, retries: 0, task, run: prepared.run, dir, node: 'no-ray' }));
        queue.push(spec);
      }
    }
    const done: TrialRecord[] = [];
    await Promise.all([0, 1].map(() => new Promise<void>((res, rej) => {
      const server = spawn(process.execPath, [CLI, 'eval-trial', '--serve', '--slots', '4'], { stdio: ['pipe', 'pipe', 'inherit'] });
      let running = 0;
      const next = (): void => {
        const spec = queue.shift();
        if (spec) {
          running++;
          server.stdin!.write(`${spec}\n`);
        } else if (running === 0) server.stdin!.end();
      };
      createInterface({ input: server.stdout! }).on('line', (line) => {
        if (!line.startsWith(TRIAL_DONE_PREFIX)) return;
        running--;
        const answer = JSON.parse(line.slice(TRIAL_DONE_PREFIX.length)) as { path: string; rc: number; error?: string };
        // A trial the server could not record has no trial.json: its answer says why.
        if (answer.rc !== 0) return rej(new Error(`no-Ray server: ${answer.path} ended with rc ${answer.rc}: ${answer.error ?? 'no error text'}`));
        const rec = JSON.parse(readFileSync(join(dirname(answer.path), 'trial.json'), 'utf8')) as TrialRecord;
        if (rec.outcome.class !== 'passed') return rej(new Error(`no-Ray server: ${answer.path} ended ${rec.outcome.class}: ${rec.outcome.cause ?? ''}`));
        done.push(rec);
        next();
      });
      for (let i = 0; i < 4; i++) next();
      server.on('exit', (code) => (code === 0 ? res() : rej(new Error(`no-Ray server exited ${code}`))));
    })));
    const t1 = Date.now();
    cpu.third.push(`machine ${(machineBusyCpu() - m0).toFixed(1)} (${(before / 3).toFixed(2)}/s before; ${fixedCosts(t0, t1, done)})`);
    return (t1 - t0) / 1000;
  };
  const raySide = async (r: number, side: 'ray' | 'third'): Promise<number> => {
    const cluster = await startLocalRayCluster({ workers: 2, dockerSlots: 4, env: side === 'third' ? thirdEnv : {} });
    try {
      // The cluster's rate when idle, measured before the job (untimed). It is at its idle rate from
      // the moment the start returns: sampled each second after the start, the first 10 / 20 / 40 s
      // used 1.25 / 2.26 / 4.52 CPU-s, 0.1 CPU-s a second throughout (2026-12-03, load 1.7), so no
      // start-up work of the cluster's overlaps the timed job and the bench need not wait for it.
      //
      // What a fresh cluster does defer to its first job is the Jobs API's own set-up: the head's
      // dashboard agent connects to Ray (ray.init) on the first job request, and the raylet prestarts
      // a worker for that first driver (~1 CPU-s; the supervisor of that first job started 0.5 s
      // later than the next jobs' did). A user's cluster has done that at its first job, not at each
      // `tbrl eval`; so before the timed job one trivial job runs (untimed) unless --cold-cluster.
      let warm = '';
      if (!coldCluster) {
        const t = Date.now();
        const client = new RayJobsClient({ url: cluster.dashboard });
        const id = `bench-warm-up-${Date.now().toString(36)}`;
        await client.submitNew({ entrypoint: 'python -c pass', submission_id: id, runtime_env: {}, metadata: { kind: 'bench-warm-up' }, entrypoint_num_cpus: 0 });
        const end = await client.wait(id, { timeoutMs: 120_000, intervalMs: 250 });
        if (end.status !== 'SUCCEEDED') throw new Error(`the warm-up job ${id} ended ${end.status}: ${end.message ?? ''}`);
        warm = `, warm-up job ${((Date.now() - t) / 1000).toFixed(1)} s`;
      }
      const idleWatch = cluster.watchCpu(1000);
      const before = await machineBusyOver(3000);
      const idle = idleWatch.stop() / 3;
      const c0 = reapedChildrenCpu();
      const m0 = machineBusyCpu();
      const watch = cluster.watchCpu();
      const { sec, costs } = await job(`job-${side}-${r}`, ['--ray', cluster.dashboard]);
      const machine = machineBusyCpu() - m0;
      cpu[side].push(`client ${(reapedChildrenCpu() - c0).toFixed(1)}, cluster ${watch.stop().toFixed(1)}, machine ${machine.toFixed(1)} (${(before / 3).toFixed(2)}/s before; cluster idle ${idle.toFixed(2)}/s${warm}; ${costs})`);
      return sec;
    } finally {
      trace('ray job returned; stopping the cluster');
      await cluster.stop();
      trace('cluster stopped');
    }
  };
  console.log(`ray section: load average ${loadavg()[0].toFixed(1)} at the start; ${rounds} round(s), sides alternated; ${coldCluster ? 'the job timed on the freshly started cluster (--cold-cluster)' : 'an untimed trivial job first on each fresh cluster'}`);
  const times = { local: [] as number[], ray: [] as number[], third: [] as number[] };
  const three: Array<'local' | 'ray' | 'third'> = ['local', 'ray', 'third'];
  for (let r = 0; r < rounds; r++) {
    const order = third ? [...three.slice(r % 3), ...three.slice(0, r % 3)] : ((r % 2 === 0 ? ['local', 'ray'] : ['ray', 'local']) as Array<'local' | 'ray'>);
    const line: string[] = [];
    for (const side of order) {
      const l0 = loadavg()[0];
      trace(`${side} begins`);
      const sec = await sides[side](r);
      trace(`${side} ends (${sec.toFixed(1)} s)`);
      times[side].push(sec);
      line.push(`${side} ${sec.toFixed(1)} s (load ${l0.toFixed(1)})`);
    }
    const thirdLine = third ? `; ${thirdName} / local ${(times.third[r] / times.local[r]).toFixed(2)}x (CPU-s ${cpu.third[r]})` : '';
    console.log(`round ${r + 1}: ${line.join(', ')}; ray / local ${(times.ray[r] / times.local[r]).toFixed(2)}x; CPU-s local ${cpu.local[r]}, ray ${cpu.ray[r]}${thirdLine}`);
  }
  const onRay = median(times.ray);
  const local = median(times.local);
  const pairs = times.ray.map((x, i) => x / times.local[i]);
  console.log(`ray / local per round: ${pairs.map((x) => `${x.toFixed(2)}x`).join(', ')}; load average ${loadavg()[0].toFixed(1)} at the end`);
  if (third) console.log(`${thirdName} / local per round: ${times.third.map((x, i) => `${(x / times.local[i]).toFixed(2)}x`).join(', ')}; median ${median(times.third).toFixed(1)} s; the Ray side / ${thirdName} per round: ${times.ray.map((x, i) => `${(x / times.third[i]).toFixed(2)}x`).join(', ')}`);
  console.log('\n| 64 oracle trials, concurrency 8 | measured | baseline | ratio |\n|---|---|---|---|');
  console.log(`| 2-worker local Ray cluster (median of ${rounds}) | ${onRay.toFixed(1)} s | local \`tbrl eval\` ${local.toFixed(1)} s | **${(onRay / local).toFixed(2)}x** overhead (target ≤ 1.15x; rounds ${pairs.map((x) => `${x.toFixed(2)}x`).join(', ')}); ${(((onRay - local) / 64) * 1000).toFixed(0)} ms per trial |`);
}

async function resumeSection(): Promise<void> {
  const root = makeEvalTasks(['s1', 's2', 's3', 's4'], join(scratch, 'resume-tasks'));
  const jobDir = join(scratch, 'job-1000');
  const { job } = await prepareJob({ inputs: ['s1', 's2', 's3', 's4'].map((t) => join(root, t)), jobDir, run: { attempts: 250, policy: 'oracle' }, concurrency: 1 });
  // Each trial directory as a real one holds it: a ~16 KB trajectory (an oracle run of hello-world is 16.7 KB), a report, trial.json.
  const step = JSON.stringify({ type: 'step', index: 0, chosenText: 'x'.repeat(1800), actions: [{ kind: 'bash', observation: 'y'.repeat(600) }] });
  const trajectory = Array.from({ length: 7 }, () => step).join('\n') + '\n';
  const records: TrialRecord[] = [];
  for (const task of job.tasks) {
    for (let a = 1; a <= 250; a++) {
      if (task.name === 's4' && a === 250) continue; // the one missing trial
      const trial = trialName(task.name, a);
      const now = new Date().toISOString();
      const rec: TrialRecord = { schema: TRIAL_SCHEMA, trial, task: task.name, attempt: a, outcome: { class: 'passed' as const }, reward: 1, tokens: { prompt: 0, completion: 0 }, wallSec: 5, startedAt: now, endedAt: now, retries: 0 };
      writeJsonAtomic(join(trialDir(jobDir, trial), 'trial.json'), rec);
      writeFileSync(join(trialDir(jobDir, trial), 'trajectory.jsonl'), trajectory);
      writeFileSync(join(trialDir(jobDir, trial), 'report.md'), `# ${trial}\n\npassed\n`);
      records.push(rec);
    }
  }
  writeJsonAtomic(join(jobDir, 'results.json'), computeResults(job, records, 0));
  const load = loadavg()[0];
  const resumeOnce = async (env: NodeJS.ProcessEnv): Promise<number> => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [CLI, 'eval', '--resume', jobDir, '--json'], { stdio: ['ignore', 'pipe', 'ignore'], env });
    const started = await new Promise<boolean>((res) => {
      let buf = '';
      child.stdout.on('data', (d) => {
        buf += d;
        if (buf.includes('"type":"trial-start"')) res(true);
      });
      child.on('exit', () => res(false));
    });
    if (!started) throw new Error('tbrl eval --resume exited before starting the missing trial');
    const sec = (Date.now() - t0) / 1000;
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const docker = new DockerSandboxProvider().docker;
    const left = await docker.listContainers({ all: true, filters: { label: [`${LABEL_PID}=${child.pid}`] } });
    await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    return sec;
  };
  // Alternated with a start that compiles the CLI bundle again (no V8 code cache, src/cli/launcher.ts), to show what the cache is worth.
  const samples: number[] = [];
  const uncached: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(await resumeOnce(process.env));
    uncached.push(await resumeOnce({ ...process.env, TBRL_CODE_CACHE: '0' }));
  }
  const med = samples.sort((a, b) => a - b)[2];
  // Baseline in the same run: the CLI process starting and exiting (`tbrl --version`), which the resume includes.
  const starts = [0, 1, 2, 3, 4].map(() => tbrl(['--version']).sec).sort((a, b) => a - b);
  console.log(`\nresume samples ${samples.map((x) => x.toFixed(2)).join(', ')} s (no code cache: ${uncached.map((x) => x.toFixed(2)).join(', ')} s); load average ${load.toFixed(1)} -> ${loadavg()[0].toFixed(1)}`);
  console.log('\n| Resume | measured | baseline | target |\n|---|---|---|---|');
  console.log(`| \`tbrl eval --resume\` on a 1,000-trial job (999 done, 16 KB trajectories) to the first new trial, median of 5 | ${med.toFixed(2)} s (process start included) | \`tbrl --version\` ${starts[2].toFixed(2)} s | < 2 s; ${(med - starts[2]).toFixed(2)} s beyond process start |`);
  const medUncached = uncached.sort((a, b) => a - b)[2];
  console.log(`| the same without the V8 code cache (\`TBRL_CODE_CACHE=0\`), alternated with the above | ${medUncached.toFixed(2)} s | with the cache ${med.toFixed(2)} s | **${(medUncached / med).toFixed(2)}x** faster with it |`);
}

(async () => {
  try {
    if (want('resume')) await resumeSection();
    if (want('harbor')) await harborSection();
    if (want('ray')) await raySection();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
