import * as vscode from 'vscode';
import { basename } from 'node:path';
import type { CommandDef } from './context';
import { pickTask } from './pick';
import { resolveModel } from '../settings';

/**
 * Run the agent on a task as a live debug session: it stops before the first action, then at
 * breakpoints. With no endpoint in settings the oracle (reference solution) plays the agent.
 */
export const runAgent: CommandDef = {
  id: 'tbrl.runAgent',
  async run(ctx, arg) {
    const task = await pickTask(arg);
    if (!task) return false;
    const m = resolveModel(ctx.settings());
    const policy = !('error' in m) && m.baseUrl && m.name ? 'model' : 'oracle';
    if (policy === 'oracle') ctx.output.info('No endpoint in tbrl.model.profile / tbrl.model.baseUrl + tbrl.model.name: running the oracle policy (the task\'s reference solution).');
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(task)) ?? vscode.workspace.workspaceFolders?.[0];
    return vscode.debug.startDebugging(folder, { type: 'tbrl', request: 'launch', name: `Run agent on ${basename(task)}`, task, policy, stopOnEntry: true });
  },
};
