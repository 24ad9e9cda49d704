import * as vscode from 'vscode';
import { jobDirFromArgOrPick } from '../eval/pick-job';
import type { CommandContext, CommandDef } from './context';

/** `tbrl eval --resume JOB`: runs the missing trials and the retry classes with the job's own options. */
export const resumeEvalJob: CommandDef = {
  id: 'tbrl.resumeEvalJob',
  async run(ctx: CommandContext, arg) {
    const dir = await jobDirFromArgOrPick(ctx, arg, 'Resume Eval Job', (d) => !ctx.evalJobs.runner.isRunning(d));
    if (!dir) return undefined;
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(dir)) ?? vscode.workspace.workspaceFolders?.[0];
    const done = ctx.evalJobs.runner.run(['--resume', dir], dir, folder?.uri.fsPath ?? dir, `TBRL eval: resuming ${vscode.workspace.asRelativePath(dir)}`);
    return { jobDir: dir, done };
  },
};
