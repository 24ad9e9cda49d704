import { forkRun, runTask, type RunOutcome, type RunTaskResult } from '../../src/core/run/run-task';
import { runWorkspace, type RunWorkspaceResult } from '../../src/core/run/run-workspace';

/** The result of a run the test expects to succeed; a run that failed fails the test with its error. */
export async function completed<R>(outcome: Promise<RunOutcome<R>>): Promise<R> {
  const { result, error } = await outcome;
  if (error) throw error;
  return result;
}

export const runTaskOk = (options: Parameters<typeof runTask>[0]): Promise<RunTaskResult> => completed(runTask(options));
export const forkRunOk = (options: Parameters<typeof forkRun>[0]): Promise<RunTaskResult> => completed(forkRun(options));
export const runWorkspaceOk = (options: Parameters<typeof runWorkspace>[0]): Promise<RunWorkspaceResult> => completed(runWorkspace(options));
