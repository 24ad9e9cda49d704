import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { TbrlError, errorMessage } from '../errors';
import { RayJobsClient, type JobDetails } from '../trainer/jobs';
import { packageUriFor, sha256 } from '../trainer/bundle';
import { buildZip, type ZipEntry } from '../trainer/zip';
import { packageRoot } from '../sandbox/package-root';
import { TRIAL_SCHEMA, type JobConfig, type TrialRecord } from './job';
import type { TrialBackend } from './run-job';
import type { TrialSpec } from './trial';
import { RAY_DRIVER_FILE, RAY_DRIVER_SOURCE, RESULT_PREFIX, RUNNING_MARKER, START_PREFIX } from './ray-driver';

export interface RayEvalCluster {
  url: string;
  token?: string;
  /** Trials in flight at once across the cluster. */
  concurrency: number;
  /** The custom resource a node must have to run trials; default `docker`. */
  resource?: string;
  /** How often Ray re-runs a trial whose node died; default 3. */
  nodeRetries?: number;
  python?: string;
  onInfo?: (message: string) => void;
  /** A Ray task began a trial on a node (again, after its first node was lost). */
  onTrialRunning?: (e: { trial: string; node: string; rayletPid: number }) => void;
}

const STANDIN_WHEELS = 'sandbox/images/standin/wheels/';

/** What a node needs to run trials: the CLI bundle, its prompts and image recipes, the tasks, the driver. */
export function buildEvalBundle(job: JobConfig, trials: TrialSpec[], cluster: RayEvalCluster): { zip: Buffer; uri: string } {
  const root = packageRoot();
  const cli = join(root, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new TbrlError('eval-ray-no-cli', `${cli} does not exist: the cluster runs the studio's own CLI bundle.`, 'Build it first: `npm run build`.');
  const entries: ZipEntry[] = [
    { path: 'package.json', data: Buffer.from(JSON.stringify({ name: 'tbrl-studio', private: true }) + '\n') },
    { path: 'dist/cli.js', data: readFileSync(cli) },
    // dist/cli.js is the launcher; the CLI itself is this bundle next to it.
    { path: 'dist/cli-main.js', data: readFileSync(join(root, 'dist', 'cli-main.js')) },
    { path: RAY_DRIVER_FILE, data: Buffer.from(RAY_DRIVER_SOURCE) },
    // dist/cli.js leaves ssh2 external (docker-modem requires it at load, only for ssh:// daemons); nodes get a stand-in that says so.
    { path: 'node_modules/ssh2/package.json', data: Buffer.from(JSON.stringify({ name: 'ssh2', version: '0.0.0-tbrl-standin', main: 'index.js' }) + '\n') },
    { path: 'node_modules/ssh2/index.js', data: Buffer.from("class Client { constructor() { throw new Error('ssh:// Docker hosts are not supported on tbrl eval --ray nodes (no ssh2 in the bundle); use the node\\'s local socket.'); } }\nmodule.exports = { Client };\n") },
  ];
  // dist/proto: dockerode's BuildKit protos, read at run time when a node builds a task image.
  for (const [dir, prefix] of [[join(root, 'dist', 'prompts'), 'dist/prompts'], [join(root, 'dist', 'proto'), 'dist/proto'], [join(root, 'sandbox'), 'sandbox']] as const) {
    for (const f of walk(dir)) {
      const path = `${prefix}/${relative(dir, f).split(sep).join('/')}`;
      // The stand-in recipes' offline wheels (~19 MB, scripts/build-standins.mjs) are left out: every node
      // would unpack them for every job, and a node builds a stand-in only when it lacks the image, and
      // then installs from its package index (the recipe works without them).
      if (path.startsWith(STANDIN_WHEELS)) continue;
      entries.push({ path, data: readFileSync(f) });
    }
  }
  const used = new Set(trials.map((t) => t.task.name));
  // Ray unpacks the package without file modes; the nodes put them back (a task's scripts must stay
  // executable, and its image tag hashes the modes: with them a node reuses the image the client built).
  const modes: Record<string, number> = {};
  for (const task of job.tasks) {
    if (!used.has(task.name)) continue;
    for (const f of walk(task.dir)) {
      const path = `tasks/${task.name}/${relative(task.dir, f).split(sep).join('/')}`;
      entries.push({ path, data: readFileSync(f) });
      const mode = statSync(f).mode & 0o7777;
      if (mode !== 0o644) modes[path] = mode;
    }
    for (const d of walkDirs(task.dir)) {
      const mode = statSync(d).mode & 0o7777;
      if (mode !== 0o755) modes[`tasks/${task.name}/${relative(task.dir, d).split(sep).join('/')}`.replace(/\/$/, '')] = mode;
    }
  }
  const plan = {
    // The bundle's mtime, put back on the nodes (the package has none) so their CLI starts find its code cache.
    cliMtimeMs: Math.floor(statSync(join(root, 'dist', 'cli-main.js')).mtimeMs),
    resource: cluster.resource ?? 'docker',
    nodeRetries: cluster.nodeRetries ?? 3,
    concurrency: cluster.concurrency,
    modes,
    trials: trials.map((t) => ({ trial: t.trial, attempt: t.attempt, retries: t.retries, task: { ...t.task, dir: `tasks/${t.task.name}` }, run: job.run })),
  };
  entries.push({ path: 'trials.json', data: Buffer.from(JSON.stringify(plan)) });
  const zip = buildZip(entries);
  return { zip, uri: packageUriFor(sha256(zip)) };
}

function walkDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [dir];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walkDirs(p));
  }
  return out;
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...walk(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

/** A file of a trial directory as the driver sends it: UTF-8 text as is, anything else base64. */
export type RayTrialFile = { text: string } | { base64: string };

export interface RayTrialResult {
  trial: string;
  node?: string;
  rc?: number;
  stderr?: string;
  error?: string;
  files?: Record<string, RayTrialFile>;
}

/** What one line of the driver's job log says (ray-driver.ts describes the frames). */
export type RayLogEvent =
  /** `run`: one id per time a trial begins on a node (Ray's log forwarding can deliver a line more than once). */
  | { type: 'running'; trial: string; node: string; rayletPid: number; run?: string }
  | { type: 'start'; trial: string }
  | { type: 'result'; trial: string; result: RayTrialResult }
  /** A result frame that did not arrive whole: its trial, when the frame still names it, and why. */
  | { type: 'damaged'; trial?: string; reason: string };

/**
 * Reads one line of the job log. Markers are found anywhere in the line: Ray prints worker output
 * from another thread of the driver, and a line it has written without its newline yet ends up in
 * front of the driver's own. A result frame must have exactly its stated length and digest.
 */
export function parseRayLogLine(line: string): RayLogEvent | undefined {
  const frameAt = line.indexOf(RESULT_PREFIX);
  if (frameAt >= 0) {
    const rest = line.slice(frameAt + RESULT_PREFIX.length);
    const head = /^(\S+) (\d+) ([0-9a-f]{16}) /.exec(rest);
    if (!head) return { type: 'damaged', trial: /^(\S+)/.exec(rest)?.[1], reason: 'the frame header is not `<trial> <length> <digest>`' };
    const [, trial, lengthText, digest] = head;
    const payload = rest.slice(head[0].length, head[0].length + Number(lengthText));
    if (payload.length !== Number(lengthText)) return { type: 'damaged', trial, reason: `the frame is cut short (${payload.length} of ${lengthText} characters)` };
    if (createHash('sha256').update(payload, 'latin1').digest('hex').slice(0, 16) !== digest) return { type: 'damaged', trial, reason: 'the frame does not match its digest (other output landed inside it)' };
    try {
      const result = JSON.parse(payload) as RayTrialResult;
      if (result.trial !== trial) return { type: 'damaged', trial, reason: `the frame's header names ${trial}, its body ${String(result.trial)}` };
      return { type: 'result', trial, result };
    } catch (err) {
      return { type: 'damaged', trial, reason: `the frame is not JSON: ${errorMessage(err)}` };
    }
  }
  const runningAt = line.indexOf(RUNNING_MARKER);
  if (runningAt >= 0) {
    try {
      const e = JSON.parse(line.slice(runningAt + RUNNING_MARKER.length)) as { trial: string; node: string; raylet_pid: number; run?: string };
      return { type: 'running', trial: e.trial, node: e.node, rayletPid: e.raylet_pid, ...(e.run ? { run: e.run } : {}) };
    } catch {
      return undefined; // only informative: where a trial runs
    }
  }
  const startAt = line.indexOf(START_PREFIX);
  if (startAt >= 0) {
    try {
      return { type: 'start', trial: (JSON.parse(line.slice(startAt + START_PREFIX.length)) as { trial: string }).trial };
    } catch {
      return undefined; // the result frame starts the trial too
    }
  }
  return undefined;
}

/** Writes a node's trial files into the trial directory; paths from the cluster are checked to stay inside it. */
export function writeTrialFiles(dir: string, files: Record<string, RayTrialFile>): void {
  const root = resolve(dir);
  for (const [rel, file] of Object.entries(files)) {
    const target = resolve(root, rel);
    if (!target.startsWith(root + sep)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, 'text' in file ? Buffer.from(file.text, 'utf8') : Buffer.from(file.base64, 'base64'));
  }
}

/**
 * Trials on a Ray cluster: one driver job through the Jobs API, trials as Ray tasks on nodes with the
 * `docker` resource, results streamed back through the job's log into the same job directory.
 */
export function rayBackend(job: JobConfig, cluster: RayEvalCluster): TrialBackend {
  const info = cluster.onInfo ?? (() => {});
  return {
    name: 'ray',
    async run(trials, hooks, signal) {
      if (trials.length === 0) return;
      const client = new RayJobsClient({ url: cluster.url, token: cluster.token });
      // The version check is in flight while the bundle builds and its package is checked (one
      // dashboard round trip less on the way to the job); its error, when it has one, comes first:
      // it says the URL is not a (recent enough) Ray dashboard.
      const versionCheck = client.version();
      versionCheck.catch(() => undefined);
      const { zip, uri } = buildEvalBundle(job, trials, cluster);
      const [checked, uploaded] = await Promise.allSettled([versionCheck, client.ensurePackage(uri, zip)]);
      if (checked.status === 'rejected') throw checked.reason;
      if (uploaded.status === 'rejected') throw uploaded.reason;
      const version = checked.value;
      // Fresh and random: no job can exist under it, so no look-up before submitting nor status read after.
      const submissionId = `tbrl-eval-${randomBytes(6).toString('hex')}`;
      await client.submitNew({
        entrypoint: `${cluster.python ?? 'python'} ${RAY_DRIVER_FILE}`,
        submission_id: submissionId,
        runtime_env: { working_dir: uri, env_vars: { PYTHONUNBUFFERED: '1', RAY_DEDUP_LOGS: '0' } },
        metadata: { tbrl: job.versions.tbrl, kind: 'eval', trials: String(trials.length) },
        entrypoint_num_cpus: 0,
      });
      info(`Ray ${version.ray_version}: submitted ${submissionId} (${(zip.length / 1048576).toFixed(1)} MiB bundle, ${trials.length} trials)`);
      const byName = new Map(trials.map((t) => [t.trial, t]));
      const started = new Set<string>();
      const finished = new Set<string>();
      const runs = new Set<string>();
      // The tail ends when the job does, or as soon as every trial is recorded: the driver's exit and
      // Ray's noticing it (seconds on a busy head) no longer hold up the client.
      const tailStop = new AbortController();
      let chain: Promise<void> = Promise.resolve();
      const onLine = async (line: string): Promise<void> => {
        const e = parseRayLogLine(line);
        if (!e) return;
        if (e.type === 'running') {
          // A line forwarded twice (a node's log monitor may read another's files on one host) is one run.
          if (e.run !== undefined) {
            if (runs.has(e.run)) return;
            runs.add(e.run);
          }
          cluster.onTrialRunning?.({ trial: e.trial, node: e.node, rayletPid: e.rayletPid });
          return;
        }
        const spec = e.trial !== undefined ? byName.get(e.trial) : undefined;
        // Each trial is recorded once: a duplicate line (a replayed log, the second reader) is ignored.
        if (spec && finished.has(spec.trial)) return;
        if (e.type === 'damaged') info(`a result in the Ray job log arrived damaged${e.trial ? ` (${e.trial})` : ''}: ${e.reason}`);
        if (!spec) return;
        if (!started.has(spec.trial)) {
          started.add(spec.trial);
          hooks.onStart(spec);
        }
        if (e.type === 'start') return;
        finished.add(spec.trial);
        // A damaged frame is an infra failure of this trial: recorded as such, so the retry classes re-run it.
        await hooks.onDone(spec, e.type === 'result' ? recordFrom(spec, e.result) : recordFrom(spec, { trial: spec.trial, error: `its result arrived damaged in the Ray job log: ${e.reason}` }));
        if (finished.size === trials.length) tailStop.abort();
      };
      const onAbort = (): void => {
        tailStop.abort();
        void client.stop(submissionId).catch(() => undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
      // Each reader of the job log gets lines whole, in order; what two readers both deliver is recorded once (above).
      const follow = async (onFirstText?: () => void): Promise<JobDetails | undefined> => {
        let buffer = '';
        // Stopped once every trial is recorded (or the run is stopped): no status read at the very end.
        const details = await client.tail(submissionId, (text) => {
          onFirstText?.();
          onFirstText = undefined;
          buffer += text;
          const lines = buffer.split('\n');
          buffer = lines.pop() ?? '';
          for (const l of lines) chain = chain.then(() => onLine(l.trimEnd())).catch((err) => info(`bad result line: ${errorMessage(err)}`));
        }, { signal: tailStop.signal, statusOnAbort: false });
        if (buffer) chain = chain.then(() => onLine(buffer.trimEnd()));
        return details;
      };
      let details: JobDetails | undefined;
      try {
        // Ray's dashboard reads a job's log every 2 s for each reader, from the moment the reader is
        // connected to the log (file_tail_iterator sleeps 1 s at its end, tail_job_logs 1 s more), so a
        // result reaches a reader 0-2 s after the driver writes it, and the job's end waits ~1 s for its
        // last one. A second reader, opened when the first one reads for the first time, reads between
        // its reads: the dashboard head connects a reader to the log 1 s after it has found the job's
        // driver (job_head.py sleeps WAIT_FOR_SUPERVISOR_ACTOR_INTERVAL_S after each look), so this one
        // reads 1 s after the first, and the last result arrives after ~0.5 s on average. (Opened
        // together, or a fixed time after the first, the two would wait in the same 1 s look for the
        // driver and read in step.) Its cost: the log (~2 MB for 64 trials) read and sent twice.
        let firstRead!: () => void;
        const firstReadDone = new Promise<void>((res) => (firstRead = res));
        const first = follow(() => firstRead());
        const second = Promise.race([firstReadDone, new Promise<void>((res) => tailStop.signal.addEventListener('abort', () => res(), { once: true }))])
          .then(() => (tailStop.signal.aborted ? undefined : follow()))
          .catch(() => undefined);
        // The first reader is the one whose end and errors count; the second only ever delivers sooner.
        details = await first.finally(() => tailStop.abort());
        await second;
        await chain;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      // Started but never finished (the job was stopped): not recorded, so a resume runs them again.
      for (const name of started) if (!finished.has(name)) await hooks.onDone(byName.get(name)!, undefined);
      if (!signal.aborted && finished.size < trials.length && details?.status !== 'SUCCEEDED') {
        const tail = (await client.logs(submissionId).catch(() => '')).split('\n').filter((l) => !l.includes(RESULT_PREFIX)).slice(-15).join('\n');
        throw new TbrlError('eval-ray-driver-failed', `The eval driver ${submissionId} ended ${details?.status ?? 'without a status'}${details?.message ? `: ${details.message}` : ''}\n${tail}`, 'Completed trials are in the job directory; fix the cause and run `tbrl eval --resume JOB --ray URL` for the rest.');
      }
    },
  };
}

function recordFrom(spec: TrialSpec, result: RayTrialResult): TrialRecord {
  if (result.files) writeTrialFiles(spec.dir, result.files);
  const path = join(spec.dir, 'trial.json');
  if (existsSync(path)) {
    try {
      const rec = JSON.parse(readFileSync(path, 'utf8')) as TrialRecord;
      if (rec.schema === TRIAL_SCHEMA && rec.trial === spec.trial) return { ...rec, node: result.node ?? rec.node };
    } catch {
      /* fall through: recorded as an environment error below */
    }
  }
  const now = new Date().toISOString();
  const lines = result.stderr?.trim().split('\n') ?? [];
  const cause = result.error ?? (lines.find((l) => /error/i.test(l)) ?? lines.pop() ?? `the node's orchestrator exited with code ${result.rc}`);
  return { schema: TRIAL_SCHEMA, trial: spec.trial, task: spec.task.name, attempt: spec.attempt, outcome: { class: 'environment_error', cause: `on Ray node ${result.node ?? '?'}: ${cause}` }, tokens: { prompt: 0, completion: 0 }, wallSec: 0, startedAt: now, endedAt: now, retries: spec.retries, ...(result.node ? { node: result.node } : {}) };
}
