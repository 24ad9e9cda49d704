import * as vscode from 'vscode';
import { findTasks, type TaskEntry } from '../discover';
import type { CommandContext } from './context';

/** A task dir from a tree item, a folder URI, a path (what other commands pass), or a quick pick of the workspace's tasks. */
export async function pickTask(arg: unknown): Promise<string | undefined> {
  if (typeof arg === 'string' && arg) return arg;
  if (arg && typeof arg === 'object' && 'dir' in arg) return (arg as TaskEntry).dir;
  if (arg instanceof vscode.Uri) return arg.fsPath;
  const folders = vscode.workspace.workspaceFolders ?? [];
  const tasks = (await Promise.all(folders.map((f) => findTasks(f.uri.fsPath)))).flat();
  if (tasks.length === 0) {
    void vscode.window.showWarningMessage('No task directories in this workspace (a folder with task.yaml or task.toml). Create one with "TBRL: New Task".');
    return undefined;
  }
  const choice = await vscode.window.showQuickPick(tasks.map((t) => ({ label: t.name, description: t.format, dir: t.dir })), { placeHolder: 'Task' });
  return choice?.dir;
}

/** A trajectory from a URI argument, the active session, the active editor, or a quick pick of runs. */
export async function pickTrajectory(ctx: CommandContext, arg: unknown, preferSession = false): Promise<string | undefined> {
  if (arg instanceof vscode.Uri) return arg.fsPath;
  if (arg && typeof arg === 'object' && 'trajectory' in arg && typeof (arg as { trajectory: unknown }).trajectory === 'string') return (arg as { trajectory: string }).trajectory;
  const session = vscode.debug.activeDebugSession;
  if (preferSession && session?.type === 'tbrl') {
    const t = ctx.tracker.trajectoryOf(session);
    if (t) return t;
  }
  const active = vscode.window.activeTextEditor?.document;
  if (active?.fileName.endsWith('trajectory.jsonl')) return active.fileName;
  const runs = await ctx.runs.getChildren();
  if (runs.length) {
    const choice = await vscode.window.showQuickPick(
      runs.map((r) => ({ label: r.taskId, description: `${r.startedAt.slice(0, 19)} · ${r.steps === undefined ? 'unfinished' : `reward ${r.reward?.toFixed(3) ?? '-'}`}`, detail: r.trajectory, path: r.trajectory })),
      { placeHolder: 'Trajectory' },
    );
    return choice?.path;
  }
  const files = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { Trajectories: ['jsonl'] }, openLabel: 'Open trajectory' });
  return files?.[0]?.fsPath;
}
