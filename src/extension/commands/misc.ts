import * as vscode from 'vscode';
import { join } from 'node:path';
import type { TaskEntry } from '../discover';
import type { CommandDef } from './context';
import { API_KEY_SECRET } from '../debug/register';

export const setApiKey: CommandDef = {
  id: 'tbrl.setApiKey',
  async run(ctx) {
    const key = await vscode.window.showInputBox({ prompt: 'API key of the model endpoint (stored in VS Code SecretStorage, never in settings)', password: true, ignoreFocusOut: true });
    if (key === undefined) return false;
    if (key === '') await ctx.extension.secrets.delete(API_KEY_SECRET);
    else await ctx.extension.secrets.store(API_KEY_SECRET, key);
    void vscode.window.showInformationMessage(key === '' ? 'TBRL: API key removed.' : 'TBRL: API key stored.');
    return true;
  },
};

export const refreshTasks: CommandDef = { id: 'tbrl.refreshTasks', run: (ctx) => ctx.tasks.refresh() };
export const refreshRuns: CommandDef = { id: 'tbrl.refreshRuns', run: (ctx) => ctx.runs.refresh() };

export const filterRuns: CommandDef = {
  id: 'tbrl.filterRuns',
  async run(ctx, arg) {
    const query = typeof arg === 'string' ? arg : await vscode.window.showInputBox({ prompt: 'Filter runs: words match task/run/policy; pass, fail, unfinished, reward>=0.5, text:<action text>', value: ctx.runs.currentFilter });
    if (query === undefined) return;
    ctx.runs.setFilter(query);
  },
};

export const openTaskInstruction: CommandDef = {
  id: 'tbrl.openTaskInstruction',
  async run(_ctx, arg) {
    const t = arg as TaskEntry;
    const file = t.format === 'harbor' ? join(t.dir, 'instruction.md') : join(t.dir, 'task.yaml');
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  },
};
