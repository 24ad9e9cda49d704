import * as vscode from 'vscode';
import type { CommandDef } from './context';
import { pickTrajectory } from './pick';

/** Replay a trajectory in the debugger (stack = steps, step back, breakpoints). */
export const openTrajectory: CommandDef = {
  id: 'tbrl.openTrajectory',
  async run(ctx, arg) {
    const trajectory = await pickTrajectory(ctx, arg);
    if (!trajectory) return false;
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(trajectory)) ?? vscode.workspace.workspaceFolders?.[0];
    return vscode.debug.startDebugging(folder, { type: 'tbrl', request: 'launch', name: `Replay ${vscode.workspace.asRelativePath(trajectory)}`, trajectory, stopOnEntry: true });
  },
};
