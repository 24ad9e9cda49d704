import * as vscode from 'vscode';
import { join } from 'node:path';
import type { TaskEntry } from '../discover';
import { requireTaskFormat } from '../../core/tasks/formats';
import type { CommandDef } from './context';
import { profileSecret } from '../settings';

/** Stores the API key of the default endpoint, or of a model profile when tbrl.model.profiles has any. */
export const setApiKey: CommandDef = {
  id: 'tbrl.setApiKey',
  async run(ctx, arg) {
    const profiles = Object.keys(ctx.settings().model.profiles);
    let profile = typeof arg === 'string' ? arg : undefined;
    if (profile === undefined && profiles.length) {
      const pick = await vscode.window.showQuickPick(
        [{ label: 'Default endpoint', description: 'tbrl.model.baseUrl; also used by profiles without a key of their own', profile: '' }, ...profiles.map((p) => ({ label: p, description: 'model profile', profile: p }))],
        { placeHolder: 'Whose API key?' },
      );
      if (!pick) return false;
      profile = pick.profile;
    }
    const whose = profile ? `model profile "${profile}"` : 'the model endpoint';
    const key = await vscode.window.showInputBox({ prompt: `API key of ${whose} (stored in VS Code SecretStorage, never in settings; empty removes it)`, password: true, ignoreFocusOut: true });
    if (key === undefined) return false;
    const secret = profileSecret(profile || undefined);
    if (key === '') await ctx.extension.secrets.delete(secret);
    else await ctx.extension.secrets.store(secret, key);
    void vscode.window.showInformationMessage(key === '' ? `TBRL: API key of ${whose} removed.` : `TBRL: API key of ${whose} stored.`);
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

export const filterTasks: CommandDef = {
  id: 'tbrl.filterTasks',
  async run(ctx, arg) {
    const query = typeof arg === 'string' ? arg : await vscode.window.showInputBox({ prompt: 'Filter tasks by coverage label (field=quantum, scale=small, faultClasses=stale-cache, horizon=17) or name', value: ctx.tasks.currentFilter });
    if (query === undefined) return;
    ctx.tasks.setFilter(query);
  },
};

export const openTaskInstruction: CommandDef = {
  id: 'tbrl.openTaskInstruction',
  async run(_ctx, arg) {
    const t = arg as TaskEntry;
    const file = join(t.dir, requireTaskFormat(t.format).instructionFile);
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  },
};
