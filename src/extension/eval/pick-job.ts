import * as vscode from 'vscode';
import { basename } from 'node:path';
import type { CommandContext } from '../commands/context';
import type { EvalJobNode } from '../views/jobs';

/** A job directory from an Eval Jobs item, a path or URI, or a quick pick of the workspace's jobs that pass `keep`. */
export async function jobDirFromArgOrPick(ctx: CommandContext, arg: unknown, title: string, keep: (dir: string) => boolean = () => true): Promise<string | undefined> {
  if (typeof arg === 'string' && arg) return arg;
  if (arg instanceof vscode.Uri) return arg.fsPath;
  const node = arg as EvalJobNode | undefined;
  if (node && typeof node === 'object' && 'kind' in node) {
    if (node.kind === 'broken') return node.dir;
    return node.loaded.dir;
  }
  const dirs = ctx.evalJobs.jobDirs().filter(keep);
  if (!dirs.length) {
    void vscode.window.showInformationMessage(`${title}: no matching eval job in this workspace's ${ctx.settings().eval.jobsDir}/ folder.`);
    return undefined;
  }
  const choice = await vscode.window.showQuickPick(dirs.map((d) => ({ label: basename(d), detail: d, dir: d })), { title });
  return choice?.dir;
}
