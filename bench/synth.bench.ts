/**
 * Tev synthesis at corpus scale (issue #20).
 *
 *   node --import tsx bench/synth.bench.ts [--count 1000] [--full-sample 7|all] [--baseline-sample 1] [--baseline previous|pytest|main] [--baseline-checkout DIR] [--process-baseline 0]
 *       [--task-concurrency 2] [--probe-concurrency 2] [--per-domain 20] [--concurrency 2] [--tier small]
 *
 * 1. `--count` tasks across the seven domains (round robin, seeds 1..count) at the small tier:
 *    generation + the static gates (round trip, reversible faults, share-no-code, no-leak) per
 *    task, the gate pass rate and the median horizon. Baseline in the same run: generation alone.
 *    Then the full host gates (reference steps graded by both graders, the strict verifier, every
 *    gaming probe) on `--full-sample` of those tasks (`all`: every one), one per domain first.
 *    Target: ≤ 1 s per task for generation + all gates, excluding image builds.
 *    - Same-run baseline first, on the first `--baseline-sample` tasks, one task at a time and
 *      alternated task by task: a previous path against the current one; their gate verdicts,
 *      reference Φ and per-probe verdicts and Φ must be identical. `--baseline previous` (default):
 *      the path before the last round of issue #20 (Node's own spawn, scratch on os.tmpdir(),
 *      fs.cp / fs.rm, a handler process per program and no code cache in the gate server);
 *      `--baseline main`: main before shared pipeline runs (every grader runs its own);
 *      `--baseline pytest`: the one before that (also a pytest session per verifier run and a python3
 *      per SQLite read). `--baseline-checkout DIR` instead: the code of another checkout (e.g. main's
 *      worktree, /work/main), loaded beside this one, each task generated and gated by it with its
 *      defaults. Each side's CPU over the whole process tree (this process and everything it started,
 *      from /proc) is printed too: the figure that load moves least. `--process-baseline N` adds the original per-process path on the first N (slow).
 *    - Then throughput: every sampled task on the current path, `--task-concurrency` tasks at a
 *      time (each running its probes `--probe-concurrency` at a time); seconds per task = wall time
 *      / tasks, on this machine's cores (the Node process's own CPU per task is printed too).
 * 2. `--per-domain` tasks per domain run in real containers (the image built from the task's
 *    Dockerfile): Φ after every reference step is monotone and ends at 1, the strict verifier
 *    passes, and three shortcuts applied to the solved container (a replaying pipeline, outputs
 *    left without a pipeline, an edited input) all score Φ = 0. 0 skips the container part.
 */
import { parseArgs } from 'node:util';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DOMAINS } from '../src/core/synth/domains';
import { synthesize, type SynthesizedTask } from '../src/core/synth/generate';
import { closeGatePythons, runGates, sharedGatePython, staticGates, type GateReport } from '../src/core/synth/gates';
import { writeSynthesizedTask } from '../src/core/synth/write';
import { evaluateProgress } from '../src/core/synth/progress';
import { SOLVER_PRELUDE } from '../src/core/synth/solver-program';
import { createDockerProvider, LABEL_RUN } from '../src/core/sandbox/index';
import { loadTask } from '../src/core/tasks/load';
import { runTests } from '../src/core/reward/tests';
import type { ScaleTier } from '../src/core/synth/types';

const { values } = parseArgs({ options: { baseline: { type: 'string' }, count: { type: 'string' }, 'full-sample': { type: 'string' }, 'baseline-sample': { type: 'string' }, 'process-baseline': { type: 'string' }, 'baseline-checkout': { type: 'string' }, 'task-concurrency': { type: 'string' }, 'probe-concurrency': { type: 'string' }, 'per-domain': { type: 'string' }, concurrency: { type: 'string' }, tier: { type: 'string' } } });
const COUNT = Number(values.count ?? 1000);
const FULL = values['full-sample'] === 'all' ? COUNT : Number(values['full-sample'] ?? 7);
const BASELINE = Number(values['baseline-sample'] ?? 1);
const PROCESS_BASELINE = Number(values['process-baseline'] ?? 0);
const TASK_CONCURRENCY = Math.max(1, Number(values['task-concurrency'] ?? 2));
const PROBE_CONCURRENCY = Math.max(1, Number(values['probe-concurrency'] ?? 2));
const PER_DOMAIN = Number(values['per-domain'] ?? 20);
const CONCURRENCY = Math.max(1, Number(values.concurrency ?? 2));
const TIER = (values.tier ?? 'small') as ScaleTier;
const PATHS = {
  pytest: { label: 'pytest sessions, Node spawn, tmpdir, fs.cp, handler per program', options: { verifier: 'pytest', reuseSqliteReads: false, spawner: 'node', scratch: 'tmpdir', trees: 'fs-promises', gateServer: 'previous' } },
  previous: { label: 'Node spawn, tmpdir, fs.cp, handler per program, no code cache', options: { spawner: 'node', scratch: 'tmpdir', trees: 'fs-promises', gateServer: 'previous' } },
  // main before shared runs: every grader runs its own pipelines (progress.py's wait is part of the task's files, so it is the new one either way).
  main: { label: 'main: no shared pipeline runs', options: { shareRuns: false } },
} as const;
const PREVIOUS_PATH = PATHS[(values.baseline ?? 'previous') as keyof typeof PATHS] ?? PATHS.previous;
const BASELINE_CHECKOUT = values['baseline-checkout'];
const domains = Object.keys(DOMAINS);
/**
 * CPU time (ms) of this process and everything it started, finished children included: utime + stime
 * + cutime + cstime from /proc of this process and of every live descendant (walked down the tree:
 * the gate server's reused processes live across tasks and are reaped only when they end, so their
 * CPU so far is counted where they are). The gate server and the spawner reap every program they
 * start, so a task's gates are all counted, whatever else runs on the machine (ticks of 10 ms:
 * compare sums over whole tasks).
 */
function treeCpuMs(): number {
  const ticks = (pid: string): number => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
      return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    } catch {
      return 0;
    }
  };
  const walk = (pid: string): number => {
    let total = ticks(pid);
    let tasks: string[] = [];
    try { tasks = readdirSync(`/proc/${pid}/task`); } catch { /* gone */ }
    for (const task of tasks) {
      let children = '';
      try { children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8'); } catch { /* gone */ }
      for (const child of children.split(' ').filter(Boolean)) total += walk(child);
    }
    return total;
  };
  return walk(String(process.pid)) * 10;
}
/** The machine's idle time (ms, all cores) from /proc/stat: idle + iowait. */
function machineIdleMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  return (cpu[3] + cpu[4]) * 10;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

async function corpus(): Promise<void> {
  const plan = Array.from({ length: COUNT }, (_, k) => ({ domain: domains[k % domains.length], tier: TIER, seed: k + 1 }));
  let started = Date.now();
  for (const p of plan) synthesize(p);
  const genOnly = Date.now() - started;
  started = Date.now();
  const tasks: SynthesizedTask[] = [];
  let passed = 0;
  for (const p of plan) {
    const t = synthesize(p);
    if (staticGates(t).every((g) => g.passed)) passed++;
    tasks.push(t);
  }
  const withStatic = Date.now() - started;
  const horizons = tasks.map((t) => t.workflow.horizon);
  const workloads = tasks.map((t) => t.workflow.horizonWorkload);
  console.log(`${COUNT} ${TIER} tasks across ${domains.length} domains`);
  console.log(`  generation alone (baseline):       ${s(genOnly / COUNT)} per task`);
  console.log(`  generation + static gates:         ${s(withStatic / COUNT)} per task (${(withStatic / Math.max(1, genOnly)).toFixed(2)}x the baseline)`);
  console.log(`  static gate pass rate:             ${passed}/${COUNT} (${((100 * passed) / COUNT).toFixed(1)}%)`);
  console.log(`  median horizon:                    ${median(horizons)} stages (range ${Math.min(...horizons)}–${Math.max(...horizons)}), ${median(workloads)} est. actions`);
  if (FULL > 0) await fullGates(tasks, withStatic / COUNT);
}

/** Full host gates on a sample of the corpus: the current path for throughput, previous paths as same-run baselines. */
async function fullGates(tasks: SynthesizedTask[], staticPerTask: number): Promise<void> {
  // One per domain first (the plan is round robin), then further tasks of the plan.
  const sample = tasks.slice(0, Math.min(FULL, tasks.length));
  const a0 = Date.now();
  const server = await sharedGatePython();
  const serverStart = Date.now() - a0;
  const verdicts = (g: GateReport) => JSON.stringify({ passed: g.passed, phi: g.referencePhi, probes: g.probes, gates: g.gates.map((x) => [x.name, x.passed]) });
  const load = () => loadavg().map((x) => x.toFixed(1)).join(' ');
  console.log(`  full host gates (warm gate server: ${server.mode}, started once in ${s(serverStart)}; verifier runner ${server.verifierRunner ? 'on' : 'off: pytest sessions'}); load average ${load()}`);

  // 1. Same-run baseline, alternated task by task on the first BASELINE tasks, one task at a time:
  //    the previous path (PREVIOUS_PATH) and the current one, on the same task.
  // --baseline-checkout DIR: the baseline is another checkout's code (e.g. main's worktree), loaded
  // into this process beside the current one (its own modules, gate server and spawner); each task is
  // generated by that checkout's generator and gated with its default options.
  let baselineLabel: string = PREVIOUS_PATH.label;
  let runPrevious = (t: SynthesizedTask): Promise<GateReport> => runGates(t, PREVIOUS_PATH.options);
  let closePrevious = async (): Promise<void> => undefined;
  if (BASELINE_CHECKOUT) {
    const dir = resolve(BASELINE_CHECKOUT);
    const other = (await import(pathToFileURL(join(dir, 'src/core/synth/gates.ts')).href)) as typeof import('../src/core/synth/gates');
    const otherGen = (await import(pathToFileURL(join(dir, 'src/core/synth/generate.ts')).href)) as typeof import('../src/core/synth/generate');
    await other.sharedGatePython();
    baselineLabel = `the code of ${dir}`;
    runPrevious = (t) => other.runGates(otherGen.synthesize({ domain: t.spec.name, tier: t.labels.scale, seed: t.draw.world.seed }), {});
    closePrevious = () => other.closeGatePythons();
  }
  const pairs: { previous: number; current: number; previousCpu: number; currentCpu: number; previousNode: number; currentNode: number }[] = [];
  let same = 0;
  for (const t of sample.slice(0, BASELINE)) {
    const order = pairs.length % 2 === 0 ? (['previous', 'current'] as const) : (['current', 'previous'] as const);
    const ms: Record<string, number> = {};
    const cpu: Record<string, number> = {};
    const nodeCpu: Record<string, number> = {};
    const reports: Record<string, GateReport> = {};
    for (const path of order) {
      const a = Date.now();
      const c = treeCpuMs();
      const n = process.cpuUsage();
      reports[path] = await (path === 'previous' ? runPrevious(t) : runGates(t, {}));
      ms[path] = Date.now() - a;
      cpu[path] = treeCpuMs() - c;
      const nd = process.cpuUsage(n);
      nodeCpu[path] = (nd.user + nd.system) / 1000;
    }
    pairs.push({ previous: ms.previous, current: ms.current, previousCpu: cpu.previous, currentCpu: cpu.current, previousNode: nodeCpu.previous, currentNode: nodeCpu.current });
    if (verdicts(reports.previous) === verdicts(reports.current)) same++;
    else console.log(`  DIFFERENT ${t.id}: previous ${verdicts(reports.previous)} vs current ${verdicts(reports.current)}`);
    console.log(`    ${t.id}: previous path ${s(ms.previous)} (${reports.previous.verifierRuns?.runner} runner / ${reports.previous.verifierRuns?.pytest} pytest; CPU ${s(cpu.previous)}), current ${s(ms.current)} (${reports.current.verifierRuns?.runner} runner / ${reports.current.verifierRuns?.pytest} pytest; CPU ${s(cpu.current)}), ${(ms.previous / Math.max(1, ms.current)).toFixed(2)}x`);
  }
  if (pairs.length > 0) {
    const prev = pairs.reduce((x, p) => x + p.previous, 0) / pairs.length;
    const cur = pairs.reduce((x, p) => x + p.current, 0) / pairs.length;
    const prevCpu = pairs.reduce((x, p) => x + p.previousCpu, 0) / pairs.length;
    const curCpu = pairs.reduce((x, p) => x + p.currentCpu, 0) / pairs.length;
    const prevNode = pairs.reduce((x, p) => x + p.previousNode, 0) / pairs.length;
    const curNode = pairs.reduce((x, p) => x + p.currentNode, 0) / pairs.length;
    console.log(`  previous path (${baselineLabel}) vs current, one task at a time, alternated, ${pairs.length} task(s): ${s(prev)} vs ${s(cur)} per task, ${(prev / Math.max(1, cur)).toFixed(2)}x; CPU of the whole process tree ${s(prevCpu)} vs ${s(curCpu)} per task, ${(prevCpu / Math.max(1, curCpu)).toFixed(2)}x (of which the Node process ${s(prevNode)} vs ${s(curNode)}); identical gate results on ${same}/${pairs.length}; load average ${load()}`);
  }
  await closePrevious();
  for (const t of sample.slice(0, PROCESS_BASELINE)) {
    const a = Date.now();
    const r = await runGates(t, { runner: 'process' });
    const cur = await runGates(t);
    console.log(`    ${t.id}: original per-process path ${s(Date.now() - a - cur.durationMs)}, current ${s(cur.durationMs)}; identical gate results: ${verdicts(r) === verdicts(cur)}`);
  }

  // 2. Throughput: every sampled task, TASK_CONCURRENCY tasks at a time (each runs its probes two at
  //    a time); seconds per task = wall time / tasks.
  const times: number[] = [];
  let ok = 0, probes = 0, shortcuts = 0, shortcutsAtZero = 0, runner = 0, pytest = 0, next = 0;
  const started = Date.now();
  const cpu0 = process.cpuUsage();
  const tree0 = treeCpuMs();
  const idle0 = machineIdleMs();
  await Promise.all(Array.from({ length: Math.min(TASK_CONCURRENCY, sample.length) }, async () => {
    while (next < sample.length) {
      const t = sample[next++];
      const r = await runGates(t, { concurrency: PROBE_CONCURRENCY });
      times.push(r.durationMs);
      if (r.passed) ok++;
      else console.log(`  REJECTED ${t.id}: ${r.gates.filter((g) => !g.passed).map((g) => `${g.name}: ${g.detail.slice(0, 200)}`).join(' | ')}`);
      probes += r.probes.length;
      shortcuts += r.probes.filter((p) => p.kind === 'shortcut').length;
      shortcutsAtZero += r.probes.filter((p) => p.kind === 'shortcut' && p.phi === 0 && !p.verifierPassed).length;
      runner += r.verifierRuns?.runner ?? 0;
      pytest += r.verifierRuns?.pytest ?? 0;
      if (times.length % 10 === 0 || sample.length <= 14) console.log(`    ${times.length}/${sample.length} ${t.id}: ${s(r.durationMs)} (${r.probes.length} probes); ${s((Date.now() - started) / times.length)} per task so far, load average ${load()}`);
    }
  }));
  const wall = Date.now() - started;
  const cpu = process.cpuUsage(cpu0);
  const treeCpu = treeCpuMs() - tree0;
  const idle = machineIdleMs() - idle0;
  await closeGatePythons();
  console.log(`  full host gates, ${sample.length} task(s), ${Math.min(TASK_CONCURRENCY, sample.length)} at a time (probes ${PROBE_CONCURRENCY} at a time in each) on ${cpus().length} cores: ${s(wall / sample.length)} per task (wall / tasks; one task's own time: median ${s(median(times))}); ${ok}/${sample.length} passed; ${probes} probes, ${shortcutsAtZero}/${shortcuts} shortcuts at Φ = 0 and failing the verifier; verifier runs: ${runner} by the runner, ${pytest} by pytest; the gates' Node process itself used ${s((cpu.user + cpu.system) / 1000 / sample.length)} CPU per task; the whole process tree ${s(treeCpu / sample.length)} CPU per task; machine idle ${((100 * idle) / (cpus().length * wall)).toFixed(1)}% of the ${cpus().length} cores' time; load average ${load()}`);
  console.log(`  => generation + all gates ≈ ${s(staticPerTask + wall / sample.length)} per task (target ≤ 1 s)`);
}

async function containers(): Promise<void> {
  if (PER_DOMAIN <= 0) return;
  const provider = createDockerProvider();
  const runId = `synth-bench-${process.pid}`;
  const scratch = mkdtempSync(join(tmpdir(), 'tbrl-synth-bench-'));
  let tasks = 0, monotone = 0, endAtOne = 0, verifierPassed = 0, probeZero = 0, probeTotal = 0;
  const failures: string[] = [];
  const jobs = domains.flatMap((domain) => Array.from({ length: PER_DOMAIN }, (_, k) => ({ domain, seed: 500 + k })));

  async function one(domain: string, seed: number): Promise<void> {
    const t = synthesize({ domain, tier: 'unit', seed });
    const dir = join(scratch, t.id);
    await writeSynthesizedTask(t, dir, 'terminal-bench');
    const task = await loadTask(dir);
    const sb = await provider.create({ image: { kind: 'dockerfile', context: dir, dockerfile: 'Dockerfile' }, runId, network: false });
    try {
      const phis = [(await evaluateProgress(sb, task))!.phi];
      for (const [i, step] of t.steps.entries()) {
        await sb.writeFile(`/tmp/ref-${i}.sh`, `${SOLVER_PRELUDE}\n${step.script}\n`);
        const r = await sb.exec(`bash /tmp/ref-${i}.sh && rm /tmp/ref-${i}.sh`);
        if (r.exitCode !== 0) throw new Error(`step ${step.name}: ${r.output.slice(-300)}`);
        phis.push((await evaluateProgress(sb, task))!.phi);
      }
      tasks++;
      if (phis.every((p, i) => i === 0 || p >= phis[i - 1])) monotone++;
      else failures.push(`${t.id}: Φ not monotone (${phis.join(' ')})`);
      if (phis.at(-1) === 1) endAtOne++;
      else failures.push(`${t.id}: Φ ends at ${phis.at(-1)}`);
      if ((await runTests({ task, sandbox: sb })).tests === 1) verifierPassed++;
      else failures.push(`${t.id}: the strict verifier fails the reference`);
      const shortcuts = [
        'mkdir -p /app/answers && cp /app/out/* /app/answers/ && printf \'#!/bin/bash\\nmkdir -p "$2" && cp /app/answers/* "$2"/\\n\' > /app/pipeline.sh',
        'rm -f /app/pipeline.sh',
        `cp -a /app/ref_pipeline.py /tmp/keep.py && printf 'cat > /app/pipeline.sh <<X\\nexec python3 /app/ref_pipeline.py "\\$1" "\\$2" summary\\nX\\n' | bash && echo '#' >> /app/${t.spec.dimA.file} && bash /app/pipeline.sh /app/data /app/out`,
      ];
      for (const [i, cmd] of shortcuts.entries()) {
        await sb.exec(cmd);
        probeTotal++;
        const phi = (await evaluateProgress(sb, task))!.phi;
        if (phi === 0) probeZero++;
        else failures.push(`${t.id}: shortcut ${i + 1} earns Φ = ${phi}`);
      }
    } finally {
      await sb.close();
    }
  }

  const started = Date.now();
  let next = 0, done = 0;
  try {
    // Tasks run CONCURRENCY at a time; one that fails is counted and named, and the rest go on.
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, jobs.length) }, async () => {
      while (next < jobs.length) {
        const { domain, seed } = jobs[next++];
        await one(domain, seed).catch((err: unknown) => { failures.push(`${domain} seed ${seed}: ${err instanceof Error ? err.message : String(err)}`); });
        if (++done % 10 === 0) console.log(`  ${done}/${jobs.length} tasks in containers (${s((Date.now() - started) / done)} per task)`);
      }
    }));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    const left = await provider.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`] } });
    if (left.length) console.log(`  ${left.length} container(s) left behind`);
  }
  console.log(`reference solutions in real containers: ${tasks} of ${jobs.length} task(s) ran (${PER_DOMAIN} per domain × ${domains.length}, ${CONCURRENCY} at a time), ${s((Date.now() - started) / Math.max(1, jobs.length))} per task incl. image build`);
  console.log(`  Φ monotone ${monotone}/${tasks}, Φ = 1 at the end ${endAtOne}/${tasks}, strict verifier passes ${verifierPassed}/${tasks}, shortcut probes at Φ = 0: ${probeZero}/${probeTotal}`);
  for (const f of failures) console.log(`  FAILED ${f}`);
}

void (async () => {
  await corpus();
  await containers();
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
