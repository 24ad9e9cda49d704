import type { RunContext, RunOutcome, RunPhase, RunTaskOptions } from './context';
import { prepareFork, type ForkSource } from './fork';
import { prepare } from './phases/prepare';
import { sandboxPhase } from './phases/sandbox';
import { agentPhase } from './phases/agent';
import { scorePhase } from './phases/score';
import { creditPhase } from './phases/credit';
import { snapshotPhase } from './phases/snapshot';
import { finalize } from './phases/finalize';

export type { PhaseName, RunContext, RunEvent, RunOutcome, RunPhase, RunProgress, RunTaskOptions, RunTaskResult } from './context';
export { safeName, timestamp } from './phases/prepare';

/**
 * The phases between prepare and finalize, in order. To add one: a file in phases/ exporting a
 * `RunPhase`, its name in `PhaseName` (context.ts), and its place in this list.
 */
export const PIPELINE: readonly RunPhase[] = [sandboxPhase, agentPhase, scorePhase, creditPhase, snapshotPhase];

/** Runs the phases in order until one throws; what it threw becomes the run's failure. */
export async function runPhases(ctx: RunContext, phases: readonly RunPhase[] = PIPELINE): Promise<void> {
  try {
    for (const phase of phases) {
      ctx.phase = phase.name;
      await phase.run(ctx);
    }
  } catch (err) {
    ctx.failure = err;
  }
}

/**
 * One run end to end: prepare → sandbox → agent → score → credit → snapshot → finalize. The
 * sandbox is always closed; an error or interrupt still leaves a trajectory whose footer says so,
 * and comes back as `error` beside the result. Only a run that could not start (prepare failed:
 * nothing on disk) rejects.
 */
export async function runTask(options: RunTaskOptions): Promise<RunOutcome> {
  const ctx = await prepare(options);
  await runPhases(ctx);
  return finalize(ctx);
}

/** `tbrl run --fork-from <trajectory> --step K`: a new run from step K's checkpoint of an earlier run, on its task. */
export async function forkRun(options: Omit<RunTaskOptions, 'taskDir' | 'forkFrom'> & ForkSource & { taskDir?: string }): Promise<RunOutcome> {
  const { trajectoryPath, step, ...rest } = options;
  const taskDir = rest.taskDir ?? (await prepareFork({ trajectoryPath, step }, rest.cwd)).source.header.task.dir;
  return runTask({ ...rest, taskDir, forkFrom: { trajectoryPath, step } });
}
