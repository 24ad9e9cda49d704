import * as vscode from 'vscode';
import { jobDirFromArgOrPick } from '../eval/pick-job';
import type { CommandContext, CommandDef } from './context';

/** SIGINT to a job this editor runs: its trials stop, completed ones stay, and the job stays resumable. */
export const cancelEvalJob: CommandDef = {
  id: 'tbrl.cancelEvalJob',
  async run(ctx: CommandContext, arg) {
    const dir = await jobDirFromArgOrPick(ctx, arg, 'Cancel Eval Job', (d) => ctx.evalJobs.runner.isRunning(d));
    if (!dir) return false;
    if (ctx.evalJobs.runner.cancel(dir)) return true;
    void vscode.window.showInformationMessage(`${dir} is not running from this editor (a job started in a terminal stops with Ctrl-C there).`);
    return false;
  },
};
