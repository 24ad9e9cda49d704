import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { availableParallelism, loadavg } from 'node:os';
import { TbrlError } from '../errors';
import { isMasked, type OutcomeClass } from '../run/outcome';
import { loadTask } from '../tasks/load';
import { loadSystemPrompt } from '../agent/prompt';
import { collectContext, contextHash } from '../sandbox/build-context';
import { VERSION } from '../version';
import { timestamp } from '../run/run-task';
import {
  JOB_SCHEMA, computeResults, readJobConfig, readTrials, retriedCount, setAsideTrial, trialDir, trialName, writeJsonAtomic,
  type JobConfig, type JobResults, type JobRunConfig, type JobTask, type TrialRecord,
} from './job';
import { resolveTaskSources, type TaskSourceOptions } from './sources';
import { runTrial, type TrialRunOptions, type TrialSpec } from './trial';
import { writeTrialExports, writeHarborJob, type ExportOptions } from './interop';
import { rayBackend, type RayEvalCluster } from './ray';
import { DockerSandboxProvider } from '../sandbox/provider';
import { holdSharedReaders } from '../sandbox/shared-readers';
import type { SandboxSpec } from '../sandbox/types';
import { taskImageSource, taskSandboxSpec } from '../run/task-sandbox';
import { EvalSandboxPool, MAX_WARM_LOOKAHEAD, warmLookahead } from './warm-pool';

export type EvalEvent =
  | { type: 'job-start'; jobDir: string; resumed: boolean; tasks: number; trials: number; toRun: number; alreadyDone: number; retrying: number }
  | { type: 'trial-start'; trial: string; task: string; attempt: number; retries: number }
  | { type: 'trial-end'; trial: string; record: TrialRecord; willRetry: boolean }
  | { type: 'progress'; done: number; total: number; running: number; outcomes: Partial<Record<OutcomeClass, number>>; trialsPerMin: number; etaSec: number | null }
  | { type: 'job-end'; jobDir: string; interrupted: boolean; results: JobResults };

/** Runs a batch of trials somewhere (this machine, a Ray cluster) and reports each as it starts and ends. */
export interface TrialBackend {
  readonly name: string;
  run(trials: TrialSpec[], hooks: { onStart(spec: TrialSpec): void; onDone(spec: TrialSpec, record: TrialRecord | undefined): Promise<void> | void }, signal: AbortSignal): Promise<void>;
}

/** The classes re-run by default: infra failures that a second try can fix. */
export const DEFAULT_RETRY_CLASSES: OutcomeClass[] = ['environment_error', 'verifier_error', 'model_error'];

export interface EvalJobOptions {
  cwd?: string;
  /** Task inputs (dirs, globs, datasets, list files); on resume optional, and then checked against the job. */
  inputs?: string[];
  sources?: Omit<TaskSourceOptions, 'cwd'>;
  /** A new job's directory; default jobs/<time>. */
  jobDir?: string;
  /** Resume this job directory. */
  resume?: string;
  /** The run config for a new job; on resume only the keys given here are compared with the job's. */
  run: Partial<JobRunConfig>;
  concurrency: number;
  retry?: { classes?: OutcomeClass[]; maxRetries?: number };
  outputs?: ExportOptions;
  backend?: TrialBackend;
  /** Run the trials on this Ray cluster instead of this machine. */
  rayCluster?: RayEvalCluster;
  /** Passed to every runTask (the local backend): e.g. an API key that must not be stored in job.json. */
  trialOptions?: TrialRunOptions;
  signal?: AbortSignal;
  onEvent?: (e: EvalEvent) => void;
}

const RUN_DEFAULTS: JobRunConfig = { trace: true, checkpoint: false, attempts: 1, timeoutMultiplier: 1 };

export async function prepareJob(options: EvalJobOptions): Promise<{ jobDir: string; job: JobConfig; resumed: boolean }> {
  const cwd = options.cwd ?? process.cwd();
  if (options.resume) {
    const jobDir = resolve(cwd, options.resume);
    const job = readJobConfig(jobDir);
    const differences = diffRunConfig(job.run, options.run);
    if (options.inputs?.length) {
      const sources = await resolveTaskSources(options.inputs, { ...options.sources, cwd });
      const want = job.tasks.map((t) => `${t.name}=${t.dir}`).sort().join('\n');
      const got = sources.map((s) => `${s.name}=${s.dir}`).sort().join('\n');
      if (want !== got) {
        const jobNames = new Set(job.tasks.map((t) => t.name));
        const gotNames = new Set(sources.map((s) => s.name));
        const added = [...gotNames].filter((n) => !jobNames.has(n));
        const missing = [...jobNames].filter((n) => !gotNames.has(n));
        differences.push(`tasks: ${added.length ? `not in the job: ${added.slice(0, 5).join(', ')}${added.length > 5 ? '…' : ''}` : ''}${added.length && missing.length ? '; ' : ''}${missing.length ? `in the job but not given: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? '…' : ''}` : ''}${!added.length && !missing.length ? 'same names, different directories' : ''}`);
      }
    }
    if (differences.length) {
      throw new TbrlError('eval-config-mismatch', `The job in ${jobDir} was started with a different config:\n  ${differences.join('\n  ')}`, 'Resume with the same options (or none: the job remembers its own), or start a new job with --job-dir.');
    }
    return { jobDir, job, resumed: true };
  }
  if (!options.inputs?.length) throw new TbrlError('eval-no-tasks', 'No tasks given.', 'Pass task directories, a dataset directory, a glob or a list file, e.g. `tbrl eval tasks/ --attempts 3`.');
  const sources = await resolveTaskSources(options.inputs, { ...options.sources, cwd });
  const jobDir = resolve(cwd, options.jobDir ?? join('jobs', timestamp()));
  if (existsSync(join(jobDir, 'job.json'))) throw new TbrlError('eval-job-exists', `${jobDir} already holds a job.`, `Resume it with \`tbrl eval --resume ${options.jobDir ?? jobDir}\`, or pick another --job-dir.`);
  const tasks: JobTask[] = [];
  for (const s of sources) {
    const task = await loadTask(s.dir);
    tasks.push({
      name: s.name,
      dir: task.dir,
      id: task.id,
      format: task.format,
      contentHash: await taskHash(task.dir),
      image: 'image' in task.environment ? task.environment.image : `build:${task.environment.dockerfile}`,
      agentTimeoutSec: task.agentTimeoutSec,
      testTimeoutSec: task.testTimeoutSec,
    });
  }
  const run: JobRunConfig = { ...RUN_DEFAULTS, ...stripUndefined(options.run) };
  const job: JobConfig = {
    schema: JOB_SCHEMA,
    createdAt: new Date().toISOString(),
    versions: { tbrl: VERSION, node: process.version, promptVersion: loadSystemPrompt().version },
    run,
    tasks,
    ...(options.outputs && (options.outputs.exportAtif || options.outputs.harborLayout) ? { outputs: { exportAtif: !!options.outputs.exportAtif, harborLayout: !!options.outputs.harborLayout } } : {}),
  };
  writeJsonAtomic(join(jobDir, 'job.json'), job);
  return { jobDir, job, resumed: false };
}

export async function taskHash(dir: string): Promise<string> {
  return (await contextHash(collectContext(dir, { ignore: () => false }), '')).slice(0, 16);
}

/** The keys of `given` (flags on the command line) whose value differs from the job's. */
export function diffRunConfig(job: JobRunConfig, given: Partial<JobRunConfig>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined) continue;
    const stored = (job as unknown as Record<string, unknown>)[key] ?? (RUN_DEFAULTS as unknown as Record<string, unknown>)[key];
    if (JSON.stringify(stored) !== JSON.stringify(value)) out.push(`${key}: the job has ${JSON.stringify(stored) ?? 'nothing'}, the command line says ${JSON.stringify(value)}`);
  }
  return out;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Trials in this process, `concurrency` at a time. They share what one `tbrl run` would set up for
 * itself: one Docker provider (its connection, and what it learnt about the daemon on the first
 * create) and, while the batch runs, the containers that only read an image's pristine files
 * (shared-readers.ts), so a trial starts two containers (sandbox, tracer) instead of three.
 */
export function localBackend(run: JobRunConfig, concurrency: number, trialOptions: TrialRunOptions = {}): TrialBackend {
  return {
    name: 'local',
    async run(trials, hooks, signal) {
      // Our own Docker provider gets the warm pool and the deferred removals (warm-pool.ts); a caller's provider is used as given.
      // TBRL_EVAL_WARM_POOL: unset, warm sandboxes only for idle cores; N, N of them; 0, neither they nor the
      // deferred removals (bench/eval.bench.ts measures the settings against each other).
      const setting = process.env.TBRL_EVAL_WARM_POOL;
      const pool = trialOptions.sandboxProvider || setting === '0' ? undefined : new EvalSandboxPool(new DockerSandboxProvider(), {
        lookahead: () => warmLookahead(concurrency, availableParallelism(), loadavg()[0], setting),
        maxPendingRemovals: Math.max(2, concurrency),
        runLabel: `eval-warm-${process.pid}`,
      });
      const shared: TrialRunOptions = { ...trialOptions, sandboxProvider: trialOptions.sandboxProvider ?? pool ?? new DockerSandboxProvider(), ...(pool && !trialOptions.deferClose ? { deferClose: pool.deferClose } : {}) };
      const releaseReaders = holdSharedReaders();
      const queue = [...trials];
      const sandboxSpecs = new Map<string, Promise<SandboxSpec | undefined>>();
      const loadedSpecs = new Map<string, SandboxSpec | undefined>();
      const specOf = (t: TrialSpec): Promise<SandboxSpec | undefined> => {
        let s = sandboxSpecs.get(t.task.dir);
        if (!s) sandboxSpecs.set(t.task.dir, (s = warmableSpec(t.task.dir, trialOptions.env ?? process.env).then((v) => (loadedSpecs.set(t.task.dir, v), v))));
        return s;
      };
      const prewarm = async (): Promise<void> => {
        if (!pool || signal.aborted || !queue.length) return;
        await Promise.all(queue.slice(0, WARM_LOOKAHEAD).map(specOf));
        // The queue as it is now: trials that started while the specs loaded have their sandboxes already.
        const upcoming = queue.slice(0, WARM_LOOKAHEAD).map((t) => loadedSpecs.get(t.task.dir)).filter((s): s is SandboxSpec => !!s);
        if (!signal.aborted) pool.prewarm(upcoming);
      };
      const worker = async (): Promise<void> => {
        for (let spec = queue.shift(); spec && !signal.aborted; spec = queue.shift()) {
          hooks.onStart(spec);
          const trial = runTrial(spec, run, shared, signal);
          // The trials just started create their own sandboxes; the ones queued behind them get theirs made meanwhile.
          void prewarm().catch(() => undefined);
          await hooks.onDone(spec, await trial);
        }
      };
      try {
        await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, trials.length)) }, worker));
      } finally {
        await pool?.close();
        await releaseReaders();
      }
    },
  };
}

/** How many queued trials' specs are looked at for warm sandboxes. */
const WARM_LOOKAHEAD = MAX_WARM_LOOKAHEAD;

/** The sandbox spec createTaskSandbox will ask for this task, when such a sandbox can be made ahead (no sidecars). */
async function warmableSpec(dir: string, hostEnv: NodeJS.ProcessEnv): Promise<SandboxSpec | undefined> {
  try {
    const task = await loadTask(dir);
    if (task.harbor?.sidecars.length) return undefined;
    return { image: taskImageSource(task), runId: '', ...taskSandboxSpec(task, hostEnv) };
  } catch {
    return undefined;
  }
}

/**
 * Runs (or resumes) a job: every trial that has no trial.json, and every trial whose recorded class is
 * one of the retry classes (up to maxRetries new tries per invocation). A completed trial is never
 * run again otherwise, and nothing completed is removed: a retried try is moved under retried/.
 */
export async function runEvalJob(options: EvalJobOptions): Promise<{ jobDir: string; job: JobConfig; results: JobResults; interrupted: boolean }> {
  const { jobDir, job, resumed } = await prepareJob(options);
  const emit = options.onEvent ?? (() => {});
  const signal = options.signal ?? new AbortController().signal;
  const retryClasses = new Set(options.retry?.classes ?? DEFAULT_RETRY_CLASSES);
  for (const c of retryClasses) if (!isMasked(c)) throw new TbrlError('eval-retry-class', `"${c}" is the agent's own outcome, not an infra failure: retrying it would bias the pass rate.`, `Retry only masked classes: ${DEFAULT_RETRY_CLASSES.join(', ')}, context_overflow.`);
  const maxRetries = options.retry?.maxRetries ?? 1;
  const outputs = { ...job.outputs, ...stripUndefined(options.outputs ?? {}) };
  const completed = readTrials(jobDir);
  const started = Date.now();

  const triesThisRun = new Map<string, number>();
  const pending: TrialSpec[] = [];
  let retrying = 0;
  for (const task of job.tasks) {
    for (let attempt = 1; attempt <= job.run.attempts; attempt++) {
      const trial = trialName(task.name, attempt);
      const rec = completed.get(trial);
      if (rec && !retryClasses.has(rec.outcome.class)) continue;
      if (rec && maxRetries < 1) continue;
      if (rec) {
        retrying++;
        triesThisRun.set(trial, 1);
      }
      pending.push({ trial, task, attempt, retries: rec ? rec.retries : 0, dir: trialDir(jobDir, trial) });
    }
  }
  const total = job.tasks.length * job.run.attempts;
  emit({ type: 'job-start', jobDir, resumed, tasks: job.tasks.length, trials: total, toRun: pending.length, alreadyDone: total - pending.length, retrying });
  await checkTaskHashes(job, pending);

  const backend = options.backend ?? (options.rayCluster ? rayBackend(job, options.rayCluster) : localBackend(job.run, options.concurrency, options.trialOptions));
  let running = 0;
  let finishedThisRun = 0;
  const writeResults = (): JobResults => {
    const results = computeResults(job, completed.values(), (Date.now() - started) / 1000);
    writeJsonAtomic(join(jobDir, 'results.json'), results);
    if (outputs.harborLayout) writeHarborJob(jobDir, job, results, completed);
    return results;
  };
  const progress = (remaining: number): void => {
    const elapsedMin = (Date.now() - started) / 60000;
    const rate = elapsedMin > 0 ? finishedThisRun / elapsedMin : 0;
    const outcomes: Partial<Record<OutcomeClass, number>> = {};
    for (const r of completed.values()) outcomes[r.outcome.class] = (outcomes[r.outcome.class] ?? 0) + 1;
    emit({ type: 'progress', done: completed.size, total, running, outcomes, trialsPerMin: rate, etaSec: rate > 0 ? (remaining / rate) * 60 : null });
  };

  let batch = pending;
  while (batch.length && !signal.aborted) {
    const again: TrialSpec[] = [];
    let remaining = batch.length;
    await backend.run(batch, {
      onStart(spec) {
        running++;
        // A previous try that ended in a retry class is moved aside, whole; a cut-off one (no trial.json) is discarded.
        if (completed.has(spec.trial)) {
          const n = retriedCount(jobDir, spec.trial) + 1;
          setAsideTrial(jobDir, spec.trial, n);
          completed.delete(spec.trial);
          spec.retries = n;
        } else if (existsSync(spec.dir)) {
          rmSync(spec.dir, { recursive: true, force: true });
        }
        emit({ type: 'trial-start', trial: spec.trial, task: spec.task.name, attempt: spec.attempt, retries: spec.retries });
      },
      async onDone(spec, record) {
        running--;
        remaining--;
        if (!record) return;
        // Exports first: trial.json marks the trial complete, so a kill between the two leaves a
        // trial that resume runs again, never a complete one without its ATIF file.
        await writeTrialExports(spec.dir, outputs).catch(() => undefined);
        writeJsonAtomic(join(spec.dir, 'trial.json'), record);
        completed.set(spec.trial, record);
        finishedThisRun++;
        const tries = (triesThisRun.get(spec.trial) ?? 0) + 1;
        triesThisRun.set(spec.trial, tries);
        const willRetry = retryClasses.has(record.outcome.class) && tries <= maxRetries && !signal.aborted;
        if (willRetry) {
          again.push({ ...spec, retries: record.retries });
          remaining++;
        }
        writeResults();
        emit({ type: 'trial-end', trial: spec.trial, record, willRetry });
        progress(remaining);
      },
    }, signal);
    batch = again;
  }
  const results = writeResults();
  const interrupted = signal.aborted;
  emit({ type: 'job-end', jobDir, interrupted, results });
  return { jobDir, job, results, interrupted };
}

/** A task whose files changed since the job started would mix two tasks in one row: refuse, naming it. */
async function checkTaskHashes(job: JobConfig, pending: TrialSpec[]): Promise<void> {
  const names = new Set(pending.map((p) => p.task.name));
  const changed: string[] = [];
  for (const t of job.tasks) {
    if (!names.has(t.name)) continue;
    if (!existsSync(t.dir)) changed.push(`${t.name}: ${t.dir} no longer exists`);
    else if ((await taskHash(t.dir)) !== t.contentHash) changed.push(`${t.name}: the files in ${t.dir} changed since the job started`);
  }
  if (changed.length) throw new TbrlError('eval-config-mismatch', `Tasks of this job changed:\n  ${changed.slice(0, 10).join('\n  ')}${changed.length > 10 ? `\n  … and ${changed.length - 10} more` : ''}`, 'Restore the task files, or start a new job for the changed tasks.');
}
