import * as vscode from 'vscode';
import { basename } from 'node:path';
import type { CommandDef } from './context';
import { pickTask } from './pick';
import { existsSync } from 'node:fs';
import { resolveModel } from '../settings';
import { defaultModelPath } from '../../core/serve/default-model';

/**
 * Run the agent on a task as a live debug session: it stops before the first action, then at
 * breakpoints. With no endpoint in settings the cached local default model plays the agent
 * (`tbrl serve` in a child process), and without that the oracle (reference solution).
 */
export const runAgent: CommandDef = {
  id: 'tbrl.runAgent',
  async run(ctx, arg) {
    const task = await pickTask(arg);
    if (!task) return false;
    const m = resolveModel(ctx.settings());
    const endpoint = !('error' in m) && m.baseUrl && m.name;
    const local = !endpoint && existsSync(defaultModelPath());
    const policy = endpoint ? 'model' : local ? 'local' : 'oracle';
    if (local) ctx.output.info(`No endpoint in tbrl.model.profile / tbrl.model.baseUrl + tbrl.model.name: starting \`tbrl serve\` with the local default model ${defaultModelPath()}.`);
    if (policy === 'oracle') ctx.output.info(`No endpoint in tbrl.model.profile / tbrl.model.baseUrl + tbrl.model.name and no local model in ${defaultModelPath()} (scripts/fetch-model.sh): running the oracle policy (the task's reference solution).`);
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(task)) ?? vscode.workspace.workspaceFolders?.[0];
    return vscode.debug.startDebugging(folder, { type: 'tbrl', request: 'launch', name: `Run agent on ${basename(task)}`, task, policy, stopOnEntry: true });
  },
};
