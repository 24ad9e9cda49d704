import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TbrlError, errorMessage } from '../errors';
import { RayJobsClient } from '../trainer/jobs';
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

/** What a node needs to run trials: the CLI bundle, its prompts and image recipes, the tasks, the driver. */
export function buildEvalBundle(job: JobConfig, trials: TrialSpec[], cluster: RayEvalCluster): { zip: Buffer; uri: string } {
  const root = packageRoot();
  const cli = join(root, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new TbrlError('eval-ray-no-cli', `${cli} does not exist: the cluster runs the studio's own CLI bundle.`, 'Build it first: `npm run build`.');
  const entries: ZipEntry[] = [
    { path: 'package.json', data: Buffer.from(JSON.stringify({ name: 'tbrl-studio', private: true }) + '\n') },
    { path: 'dist/cli.js', data: readFileSync(cli) },
    { path: RAY_DRIVER_FILE, data: Buffer.from(RAY_DRIVER_SOURCE) },
    // dist/cli.js leaves ssh2 external (docker-modem requires it at load, only for ssh:// daemons); nodes get a stand-in that says so.
    { path: 'node_modules/ssh2/package.json', data: Buffer.from(JSON.stringify({ name: 'ssh2', version: '0.0.0-tbrl-standin', main: 'index.js' }) + '\n') },
    { path: 'node_modules/ssh2/index.js', data: Buffer.from("class Client { constructor() { throw new Error('ssh:// Docker hosts are not supported on tbrl eval --ray nodes (no ssh2 in the bundle); use the node\\'s local socket.'); } }\nmodule.exports = { Client };\n") },
  ];
  for (const [dir, prefix] of [[join(root, 'dist', 'prompts'), 'dist/prompts'], [join(root, 'sandbox'), 'sandbox']] as const) {
    for (const f of walk(dir)) entries.push({ path: `${prefix}/${relative(dir, f).split(sep).join('/')}`, data: readFileSync(f) });
  }
  const used = new Set(trials.map((t) => t.task.name));
  for (const task of job.tasks) {
    if (!used.has(task.name)) continue;
    for (const f of walk(task.dir)) entries.push({ path: `tasks/${task.name}/${relative(task.dir, f).split(sep).join('/')}`, data: readFileSync(f) });
  }
  const plan = {
    resource: cluster.resource ?? 'docker',
    nodeRetries: cluster.nodeRetries ?? 3,
    concurrency: cluster.concurrency,
    trials: trials.map((t) => ({ trial: t.trial, attempt: t.attempt, retries: t.retries, task: { ...t.task, dir: `tasks/${t.task.name}` }, run: job.run })),
  };
  entries.push({ path: 'trials.json', data: Buffer.from(JSON.stringify(plan)) });
  const zip = buildZip(entries);
  return { zip, uri: packageUriFor(sha256(zip)) };
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

interface RayTrialResult {
  trial: string;
  node?: string;
  rc?: number;
  stderr?: string;
  error?: string;
  files?: Record<string, string>;
}

/** Writes a node's trial files into the trial directory; paths from the cluster are checked to stay inside it. */
export function writeTrialFiles(dir: string, files: Record<string, string>): void {
  const root = resolve(dir);
  for (const [rel, b64] of Object.entries(files)) {
    const target = resolve(root, rel);
    if (!target.startsWith(root + sep)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, Buffer.from(b64, 'base64'));
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
      const version = await client.version();
      const { zip, uri } = buildEvalBundle(job, trials, cluster);
      await client.ensurePackage(uri, zip);
      const submissionId = `tbrl-eval-${randomBytes(6).toString('hex')}`;
      await client.submit({
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
      let buffer = '';
      let chain: Promise<void> = Promise.resolve();
      const onLine = async (line: string): Promise<void> => {
        const running = line.indexOf(RUNNING_MARKER);
        if (running >= 0) {
          const e = JSON.parse(line.slice(running + RUNNING_MARKER.length)) as { trial: string; node: string; raylet_pid: number };
          cluster.onTrialRunning?.({ trial: e.trial, node: e.node, rayletPid: e.raylet_pid });
        } else if (line.startsWith(START_PREFIX)) {
          const name = (JSON.parse(line.slice(START_PREFIX.length)) as { trial: string }).trial;
          const spec = byName.get(name);
          if (spec && !started.has(name)) {
            started.add(name);
            hooks.onStart(spec);
          }
        } else if (line.startsWith(RESULT_PREFIX)) {
          const result = JSON.parse(line.slice(RESULT_PREFIX.length)) as RayTrialResult;
          const spec = byName.get(result.trial);
          // Each trial is recorded once: a duplicate line (a replayed log) is ignored.
          if (!spec || finished.has(result.trial)) return;
          finished.add(result.trial);
          if (!started.has(result.trial)) {
            started.add(result.trial);
            hooks.onStart(spec);
          }
          await hooks.onDone(spec, recordFrom(spec, result));
        }
      };
      const onAbort = (): void => void client.stop(submissionId).catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      let details;
      try {
        details = await client.tail(submissionId, (text) => {
          buffer += text;
          const lines = buffer.split('\n');
          buffer = lines.pop() ?? '';
          for (const l of lines) chain = chain.then(() => onLine(l.trimEnd())).catch((err) => info(`bad result line: ${errorMessage(err)}`));
        }, { signal });
        if (buffer) chain = chain.then(() => onLine(buffer.trimEnd()));
        await chain;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      // Started but never finished (the job was stopped): not recorded, so a resume runs them again.
      for (const name of started) if (!finished.has(name)) await hooks.onDone(byName.get(name)!, undefined);
      if (!signal.aborted && details.status !== 'SUCCEEDED') {
        const tail = (await client.logs(submissionId).catch(() => '')).split('\n').filter((l) => !l.startsWith(RESULT_PREFIX)).slice(-15).join('\n');
        throw new TbrlError('eval-ray-driver-failed', `The eval driver ${submissionId} ended ${details.status}${details.message ? `: ${details.message}` : ''}\n${tail}`, 'Completed trials are in the job directory; fix the cause and run `tbrl eval --resume JOB --ray URL` for the rest.');
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
