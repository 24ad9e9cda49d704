import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TbrlError, errorMessage } from '../errors';
import { OUTCOME_CLASSES, isMasked, type OutcomeClass, type TrialOutcome } from '../run/outcome';
import { passAtK } from './stats';

/**
 * An eval job on disk, readable by a person and parseable by a program:
 *
 *   JOB/job.json                 the config, versions, prompt version, each task's dir, hash and image
 *   JOB/trials/<task>__<k>/      one directory per trial: trajectory.jsonl, report.md, trial.json
 *   JOB/retried/<task>__<k>.<r>/ earlier tries of a trial that ended in an infra class and was re-run
 *   JOB/results.json             per-task and overall rates, pass@k, tokens, cost, time, outcomes
 *
 * A trial is complete exactly when its trial.json exists; every JSON file is written to a temporary
 * name, fsync'd and renamed, so a SIGKILL leaves either the old file or the new one, never half.
 */
export const JOB_SCHEMA = 'tbrl.eval-job/1';
export const TRIAL_SCHEMA = 'tbrl.eval-trial/1';
export const RESULTS_SCHEMA = 'tbrl.eval-results/1';
export const TRIALS_DIR = 'trials';
export const RETRIED_DIR = 'retried';

export interface JobTask {
  name: string;
  dir: string;
  /** The task's own id (task.yaml / task.toml). */
  id: string;
  format: string;
  /** sha256 of the task directory's files: a resume refuses a task that changed. */
  contentHash: string;
  /** The image the task names, or `build:<Dockerfile>` for a built one (the built tag is in each trial.json). */
  image: string;
  agentTimeoutSec: number;
  testTimeoutSec: number;
}

/** What defines a job's results: a resume must match every field. */
export interface JobRunConfig {
  policy?: 'model' | 'oracle';
  baseUrl?: string;
  model?: string;
  n?: number;
  verifier?: string;
  judgeModel?: string;
  maxSteps?: number;
  maxTimeSec?: number;
  maxTokens?: number;
  trace: boolean;
  checkpoint: boolean;
  attempts: number;
  /** Multiplies each task's agent and test timeouts. */
  timeoutMultiplier: number;
  /** Hard wall-clock limit of one trial (a safety net over the agent's own limit), seconds. */
  trialTimeoutSec?: number;
  /** USD per million prompt / completion tokens, for the cost column. */
  pricePerMTok?: { prompt: number; completion: number };
}

export interface JobConfig {
  schema: typeof JOB_SCHEMA;
  createdAt: string;
  versions: { tbrl: string; node: string; promptVersion: string };
  run: JobRunConfig;
  tasks: JobTask[];
  /** Interop outputs written next to the native layout. */
  outputs?: { exportAtif?: boolean; harborLayout?: boolean };
}

export interface TrialRecord {
  schema: typeof TRIAL_SCHEMA;
  trial: string;
  task: string;
  /** 1-based attempt number within the task. */
  attempt: number;
  outcome: TrialOutcome;
  /** The reward the run computed; undefined when none was (an infra failure). */
  reward?: number;
  tokens: { prompt: number; completion: number };
  costUsd?: number;
  wallSec: number;
  startedAt: string;
  endedAt: string;
  endReason?: string;
  /** Relative to the trial directory. */
  trajectory?: string;
  /** The image the sandbox ran (the built tag for Dockerfile tasks). */
  image?: string;
  /** How many earlier tries of this trial ended in a retried class (kept under retried/). */
  retries: number;
  /** Where it ran: `local` or a Ray node id. */
  node?: string;
}

export function trialName(task: string, attempt: number): string {
  return `${task}__${attempt}`;
}

export function trialDir(jobDir: string, trial: string): string {
  return join(jobDir, TRIALS_DIR, trial);
}

export function writeJsonAtomic(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(3).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, JSON.stringify(value, null, 2) + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function readJobConfig(jobDir: string): JobConfig {
  const path = join(jobDir, 'job.json');
  if (!existsSync(path)) throw new TbrlError('eval-job-missing', `${jobDir} is not an eval job directory (no job.json).`, 'Pass the directory `tbrl eval` printed when it started (by default jobs/<time>).');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new TbrlError('eval-job-invalid', `${path} is not valid JSON: ${errorMessage(err)}`, 'Restore the file or start a new job.');
  }
  const job = raw as JobConfig;
  if (job?.schema !== JOB_SCHEMA || !Array.isArray(job.tasks) || !job.run) throw new TbrlError('eval-job-invalid', `${path} is not a ${JOB_SCHEMA} file.`, 'Start a new job; this directory was written by something else or a different version.');
  return job;
}

/** Every completed trial of a job (those with a readable trial.json); unreadable ones count as missing. */
export function readTrials(jobDir: string): Map<string, TrialRecord> {
  const out = new Map<string, TrialRecord>();
  const root = join(jobDir, TRIALS_DIR);
  if (!existsSync(root)) return out;
  for (const name of readdirSync(root)) {
    const file = join(root, name, 'trial.json');
    try {
      const rec = JSON.parse(readFileSync(file, 'utf8')) as TrialRecord;
      if (rec.schema === TRIAL_SCHEMA && rec.trial === name) out.set(name, rec);
    } catch {
      // No trial.json: the trial was cut off and will run again.
    }
  }
  return out;
}

/** How many earlier tries of a trial were moved aside. */
export function retriedCount(jobDir: string, trial: string): number {
  const root = join(jobDir, RETRIED_DIR);
  if (!existsSync(root)) return 0;
  return readdirSync(root).filter((n) => n.startsWith(`${trial}.`) && /^\d+$/.test(n.slice(trial.length + 1))).length;
}

/** Move a trial's directory aside (one rename, so a crash leaves it either in place or moved). */
export function setAsideTrial(jobDir: string, trial: string, retry: number): void {
  const from = trialDir(jobDir, trial);
  if (!existsSync(from)) return;
  mkdirSync(join(jobDir, RETRIED_DIR), { recursive: true });
  renameSync(from, join(jobDir, RETRIED_DIR, `${trial}.${retry}`));
}

export interface RateSummary {
  trials: number;
  /** Trials whose outcome is scored (passed / failed / agent_timeout). */
  scored: number;
  masked: number;
  passed: number;
  meanReward: number | null;
  passAt1: number | null;
  /** Unbiased pass@k for k = 1..K (K = the attempts); null where some task has fewer than k scored trials. */
  passAtK: Record<string, number | null>;
}

export interface TaskResult extends RateSummary {
  task: string;
  image?: string;
  outcomes: Partial<Record<OutcomeClass, number>>;
}

export interface JobResults {
  schema: typeof RESULTS_SCHEMA;
  updatedAt: string;
  complete: boolean;
  expectedTrials: number;
  overall: RateSummary & {
    outcomes: Record<OutcomeClass, number>;
    tokens: { prompt: number; completion: number };
    costUsd: number | null;
    /** Sum of the trials' wall times; `elapsedSec` is the job's own clock. */
    trialSec: number;
    elapsedSec: number;
  };
  tasks: TaskResult[];
  trials: Array<{ trial: string; task: string; attempt: number; outcome: OutcomeClass; cause?: string; reward?: number; wallSec: number; retries: number }>;
}

/**
 * Rates use only scored trials; masked (infra) trials are counted by class and left out, as if they
 * had not run. pass@k per task uses that task's scored trials; the overall figure is the mean over
 * the tasks that have at least k of them.
 */
export function computeResults(job: JobConfig, trials: Iterable<TrialRecord>, elapsedSec: number): JobResults {
  const byTask = new Map<string, TrialRecord[]>();
  for (const t of job.tasks) byTask.set(t.name, []);
  const all = [...trials].sort((a, b) => (a.task === b.task ? a.attempt - b.attempt : a.task < b.task ? -1 : 1));
  for (const t of all) byTask.get(t.task)?.push(t);
  const K = job.run.attempts;
  const tasks: TaskResult[] = [];
  for (const task of job.tasks) {
    const list = byTask.get(task.name) ?? [];
    const outcomes: Partial<Record<OutcomeClass, number>> = {};
    for (const t of list) outcomes[t.outcome.class] = (outcomes[t.outcome.class] ?? 0) + 1;
    tasks.push({ task: task.name, image: list.find((t) => t.image)?.image ?? task.image, outcomes, ...summarise(list, K) });
  }
  const scoredTasks = tasks.filter((t) => t.scored > 0);
  const overallPassAtK: Record<string, number | null> = {};
  for (let k = 1; k <= K; k++) {
    const eligible = tasks.filter((t) => t.passAtK[k] !== null && t.passAtK[k] !== undefined);
    overallPassAtK[k] = eligible.length ? eligible.reduce((s, t) => s + (t.passAtK[k] as number), 0) / eligible.length : null;
  }
  const outcomes = Object.fromEntries(OUTCOME_CLASSES.map((c) => [c, 0])) as Record<OutcomeClass, number>;
  for (const t of all) outcomes[t.outcome.class]++;
  const scored = all.filter((t) => !isMasked(t.outcome));
  const costs = all.map((t) => t.costUsd);
  return {
    schema: RESULTS_SCHEMA,
    updatedAt: new Date().toISOString(),
    complete: all.length === job.tasks.length * K,
    expectedTrials: job.tasks.length * K,
    overall: {
      trials: all.length,
      scored: scored.length,
      masked: all.length - scored.length,
      passed: scored.filter((t) => t.outcome.class === 'passed').length,
      // Means over tasks (each task weighs the same, as in Terminal-Bench's accuracy).
      meanReward: scoredTasks.length ? scoredTasks.reduce((s, t) => s + (t.meanReward ?? 0), 0) / scoredTasks.length : null,
      passAt1: overallPassAtK[1] ?? null,
      passAtK: overallPassAtK,
      outcomes,
      tokens: { prompt: sum(all.map((t) => t.tokens.prompt)), completion: sum(all.map((t) => t.tokens.completion)) },
      costUsd: costs.some((c) => c !== undefined) ? sum(costs.map((c) => c ?? 0)) : null,
      trialSec: sum(all.map((t) => t.wallSec)),
      elapsedSec,
    },
    tasks,
    trials: all.map((t) => ({ trial: t.trial, task: t.task, attempt: t.attempt, outcome: t.outcome.class, ...(t.outcome.cause ? { cause: t.outcome.cause } : {}), ...(t.reward !== undefined ? { reward: t.reward } : {}), wallSec: t.wallSec, retries: t.retries })),
  };
}

function summarise(list: TrialRecord[], K: number): RateSummary {
  const scored = list.filter((t) => !isMasked(t.outcome));
  const n = scored.length;
  const c = scored.filter((t) => t.outcome.class === 'passed').length;
  const perK: Record<string, number | null> = {};
  for (let k = 1; k <= K; k++) perK[k] = n >= k ? passAtK(n, c, k) : null;
  return {
    trials: list.length,
    scored: n,
    masked: list.length - n,
    passed: c,
    meanReward: n ? sum(scored.map((t) => t.reward ?? 0)) / n : null,
    passAt1: perK[1] ?? null,
    passAtK: perK,
  };
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
