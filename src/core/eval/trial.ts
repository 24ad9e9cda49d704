import { join } from 'node:path';
import { errorMessage } from '../errors';
import { outcomeOf, type TrialOutcome } from '../run/outcome';
import { runTask, type RunTaskOptions, type RunTaskResult } from '../run/run-task';
import { loadTask } from '../tasks/load';
import type { JobRunConfig, JobTask, TrialRecord } from './job';
import { TRIAL_SCHEMA } from './job';

/** runTask's outcome, with a run that could not start (no result) as an error value too. */
export async function runTaskSettled(options: RunTaskOptions): Promise<{ result?: RunTaskResult; error?: unknown }> {
  try {
    return await runTask(options);
  } catch (error) {
    return { error };
  }
}

export interface TrialSpec {
  trial: string;
  task: JobTask;
  attempt: number;
  /** Earlier tries of this trial already set aside. */
  retries: number;
  /** Where the run's files go. */
  dir: string;
}

/** Options every trial of a job passes to runTask on top of the job's run config (a model key, hooks). */
export type TrialRunOptions = Partial<Omit<RunTaskOptions, 'taskDir' | 'outDir' | 'task' | 'signal'>>;

/** Why a trial stopped before its end: the job was interrupted (the trial runs again on resume) or its own clock ran out. */
export const TRIAL_TIMEOUT = 'trial-timeout';

/**
 * One trial through the orchestrator: the task with its timeouts scaled by the job's multiplier, a
 * hard wall-clock limit over the whole trial, and the outcome class of the trajectory's footer.
 * Returns undefined when the job itself was interrupted (nothing is recorded; resume runs it again).
 */
export async function runTrial(spec: TrialSpec, run: JobRunConfig, extra: TrialRunOptions, signal: AbortSignal, node = 'local'): Promise<TrialRecord | undefined> {
  const started = new Date();
  if (signal.aborted) return undefined;
  const trialAbort = new AbortController();
  const onJobAbort = (): void => trialAbort.abort(signal.reason ?? 'interrupted');
  signal.addEventListener('abort', onJobAbort, { once: true });
  const timer = run.trialTimeoutSec ? setTimeout(() => trialAbort.abort(TRIAL_TIMEOUT), run.trialTimeoutSec * 1000) : undefined;
  try {
    let settled: { result?: RunTaskResult; error?: unknown };
    try {
      const task = await loadTask(spec.task.dir);
      task.agentTimeoutSec = task.agentTimeoutSec * run.timeoutMultiplier;
      task.testTimeoutSec = task.testTimeoutSec * run.timeoutMultiplier;
      settled = await runTaskSettled({
        ...extra,
        taskDir: spec.task.dir,
        task,
        outDir: spec.dir,
        policy: run.policy,
        baseUrl: run.baseUrl,
        model: run.model,
        n: run.n,
        verifier: run.verifier,
        judgeModel: run.judgeModel,
        maxSteps: run.maxSteps,
        maxTimeSec: run.maxTimeSec !== undefined ? run.maxTimeSec * run.timeoutMultiplier : undefined,
        maxTokens: run.maxTokens,
        trace: run.trace,
        checkpoint: run.checkpoint,
        signal: trialAbort.signal,
      });
    } catch (error) {
      settled = { error };
    }
    if (signal.aborted) return undefined;
    const ended = new Date();
    const footer = settled.result?.footer;
    let outcome: TrialOutcome;
    if (trialAbort.signal.reason === TRIAL_TIMEOUT) outcome = { class: 'environment_error', cause: `the trial ran past its ${run.trialTimeoutSec} s limit (--trial-timeout) and was stopped` };
    else if (!settled.result) outcome = { class: 'environment_error', cause: errorMessage(settled.error).split('\n')[0] };
    else outcome = outcomeOf(footer);
    const tokens = { prompt: footer?.usage.promptTokens ?? 0, completion: footer?.usage.completionTokens ?? 0 };
    const price = run.pricePerMTok;
    return {
      schema: TRIAL_SCHEMA,
      trial: spec.trial,
      task: spec.task.name,
      attempt: spec.attempt,
      outcome,
      ...(footer?.reward ? { reward: footer.reward.total } : {}),
      tokens,
      ...(price ? { costUsd: (tokens.prompt * price.prompt + tokens.completion * price.completion) / 1e6 } : {}),
      wallSec: (ended.getTime() - started.getTime()) / 1000,
      startedAt: started.toISOString(),
      endedAt: ended.toISOString(),
      ...(footer ? { endReason: footer.endReason } : {}),
      ...(settled.result ? { trajectory: 'trajectory.jsonl' } : {}),
      ...(settled.result?.header.sandbox?.image ? { image: settled.result.header.sandbox.image } : {}),
      retries: spec.retries,
      node,
    };
  } finally {
    if (timer) clearTimeout(timer);
    signal.removeEventListener('abort', onJobAbort);
  }
}

export function trialFiles(dir: string): { trajectory: string; report: string; record: string } {
  return { trajectory: join(dir, 'trajectory.jsonl'), report: join(dir, 'report.md'), record: join(dir, 'trial.json') };
}
