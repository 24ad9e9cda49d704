import * as vscode from 'vscode';
import { dirname } from 'node:path';
import { existsSync } from 'node:fs';
import { readSnapshotIndex, snapshotFilePath, SNAPSHOT_INDEX } from '../../core/attribution/snapshot';
import { readTrajectory } from '../../core/trajectory/reader';
import type { CommandContext, CommandDef } from './context';
import { pickTrajectory } from './pick';
import { containerUri } from '../attribution/uri';

/**
 * A file the agent changed, as the run left it, with per-line attribution. Arguments: `{trajectory,
 * path}` (links), a "Files changed" variable of the debugger (context menu), or nothing (pick a
 * run, then one of its changed files). The original content from the image is not stored, so
 * there is no diff: the file opens alone.
 */
export const openChangedFile: CommandDef = {
  id: 'tbrl.openChangedFile',
  async run(ctx, arg) {
    const fromVariable = variablePath(arg);
    const trajectory = fromVariable ? activeTrajectory(ctx) : await pickTrajectory(ctx, arg, true);
    if (!trajectory) {
      if (fromVariable) void vscode.window.showWarningMessage('No TBRL debug session is active: open the run with "TBRL: Open Trajectory" first.');
      return false;
    }
    const runDir = dirname(trajectory);
    let path = fromVariable ?? (arg && typeof arg === 'object' && typeof (arg as { path?: unknown }).path === 'string' ? (arg as { path: string }).path : undefined);
    const index = readSnapshotIndex(runDir);
    if (!path) {
      if (!index || index.files.length === 0) {
        void vscode.window.showWarningMessage(`Run ${runDir} has no saved changed files (${SNAPSHOT_INDEX} is missing or empty): only runs made by this version keep them. Run the task again to get them.`);
        return false;
      }
      const choice = await vscode.window.showQuickPick(
        [
          ...index.files.map((f) => ({ label: f.path, description: `step ${f.lastStep} · ${f.bytes} bytes`, path: f.path as string | undefined })),
          ...index.skipped.map((s) => ({ label: s.path, description: `not saved: ${s.reason}`, path: undefined })),
        ],
        { placeHolder: 'Changed file' },
      );
      if (!choice?.path) return false;
      path = choice.path;
    }
    const local = snapshotFilePath(runDir, path);
    if (!local || !existsSync(local)) {
      const why = index?.skipped.find((s) => s.path === path)?.reason ?? 'it was not saved with the run (runs made before changed files were kept have none)';
      void vscode.window.showWarningMessage(`${path} cannot be shown: ${why}.`);
      return false;
    }
    const t = await readTrajectory(trajectory);
    const doc = await vscode.workspace.openTextDocument(containerUri(runDir, t.header.runId, path));
    await vscode.window.showTextDocument(doc, { preview: false, viewColumn: vscode.ViewColumn.Active });
    return true;
  },
};

/** Selects a step in the run's debug session (the link in a changed file's hover). */
export const selectStep: CommandDef = {
  id: 'tbrl.selectStep',
  async run(ctx, arg) {
    const { trajectory, step } = (arg ?? {}) as { trajectory?: string; step?: number };
    const session = (trajectory && ctx.tracker.sessionFor(trajectory)) || (vscode.debug.activeDebugSession?.type === 'tbrl' ? vscode.debug.activeDebugSession : undefined);
    if (!session || !Number.isInteger(step)) {
      const open = 'Open Trajectory';
      const pick = await vscode.window.showInformationMessage(`No debug session of this run is active to select step ${String(step)} in.`, open);
      if (pick === open && trajectory) await vscode.commands.executeCommand('tbrl.openTrajectory', vscode.Uri.file(trajectory));
      return false;
    }
    await session.customRequest('tbrl/selectStep', { step });
    return true;
  },
};

/** A "Files changed" entry of the Variables view is named by the container path it wrote. */
function variablePath(arg: unknown): string | undefined {
  const name = (arg as { variable?: { name?: unknown } } | undefined)?.variable?.name;
  return typeof name === 'string' && name.startsWith('/') ? name : undefined;
}

function activeTrajectory(ctx: CommandContext): string | undefined {
  const session = vscode.debug.activeDebugSession;
  return session?.type === 'tbrl' ? ctx.tracker.trajectoryOf(session) : undefined;
}
