import * as vscode from 'vscode';
import { dirname, posix } from 'node:path';
import { changedFileView, readSnapshotIndex, SNAPSHOT_INDEX, type SnapshotIndex } from '../../core/attribution/snapshot';
import { readTrajectory } from '../../core/trajectory/reader';
import type { CommandContext, CommandDef } from './context';
import { pickTrajectory } from './pick';
import { containerUri } from '../attribution/uri';
import { SelectStepRequest, sendCustomRequest } from '../debug/protocol';

/**
 * A file the agent changed, as a diff: the image's content on the left (empty for a file the
 * agent created), the run's final content on the right with per-line attribution. Arguments:
 * `{trajectory, path}` (links; `alone: true` opens the final content without the diff), a "Files
 * changed" variable of the debugger (context menu), or nothing (pick a run, then one of its
 * changed files). Runs whose original was not kept open the final content alone and say why.
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
    const given = !fromVariable && arg && typeof arg === 'object' ? (arg as { path?: unknown; alone?: unknown }) : undefined;
    let path = fromVariable ?? (typeof given?.path === 'string' ? given.path : undefined);
    const index = readSnapshotIndex(runDir);
    if (!path) {
      if (!index || index.files.length === 0) {
        void vscode.window.showWarningMessage(`Run ${runDir} has no saved changed files (${SNAPSHOT_INDEX} is missing or empty): only runs made by this version keep them. Run the task again to get them.`);
        return false;
      }
      const choice = await vscode.window.showQuickPick(
        [
          ...index.files.map((f) => ({ label: f.path, description: `step ${f.lastStep} · ${f.bytes} bytes · ${originalLabel(index, f.path)}`, path: f.path as string | undefined })),
          ...index.skipped.map((s) => ({ label: s.path, description: `not saved: ${s.reason}`, path: undefined })),
        ],
        { placeHolder: 'Changed file (opens as a diff against the image)' },
      );
      if (!choice?.path) return false;
      path = choice.path;
    }
    const view = changedFileView(index, path);
    if (view.kind === 'missing') {
      void vscode.window.showWarningMessage(`${path} cannot be shown: ${view.why}.`);
      return false;
    }
    const { header } = await readTrajectory(trajectory);
    const final = containerUri(runDir, header.runId, path);
    const name = posix.basename(path);
    const options: vscode.TextDocumentShowOptions = { preview: false, viewColumn: vscode.ViewColumn.Active };
    if (view.kind === 'diff' && given?.alone !== true) {
      // Short: the tab sits under the debug toolbar otherwise; the breadcrumb names the run.
      const title = view.original === 'empty' ? `${name} (created by the run)` : `${name} (image ↔ run)`;
      await vscode.commands.executeCommand('vscode.diff', containerUri(runDir, header.runId, path, 'original'), final, title, options);
      return true;
    }
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(final), options);
    if (view.kind === 'alone') void vscode.window.showInformationMessage(`No diff for ${path}: ${view.why}. Showing the content the run left.`);
    return true;
  },
};

function originalLabel(index: SnapshotIndex, path: string): string {
  const view = changedFileView(index, path);
  return view.kind === 'diff' ? (view.original === 'empty' ? 'created' : 'diff with the image') : 'no diff';
}

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
    await sendCustomRequest(session, SelectStepRequest, { step });
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
