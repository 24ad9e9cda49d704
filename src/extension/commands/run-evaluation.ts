import * as vscode from 'vscode';
import { dirname, join, relative } from 'node:path';
import { findTasks, runsDirOf } from '../discover';
import { apiKeyFor, resolveModel } from '../settings';
import type { CommandContext, CommandDef } from './context';

function stamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

/**
 * Picks the tasks (a folder holding task directories), attempts, concurrency and policy, then runs
 * `tbrl eval` as a child process into <jobsDir>/<time>; the Eval Jobs view follows it live.
 */
export const runEvaluation: CommandDef = {
  id: 'tbrl.runEvaluation',
  async run(ctx: CommandContext) {
    const title = 'Run Evaluation';
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void vscode.window.showWarningMessage('Run Evaluation needs an open workspace folder (the job is written under its jobs folder).');
      return undefined;
    }
    const tasks = (await Promise.all((vscode.workspace.workspaceFolders ?? []).map((f) => findTasks(f.uri.fsPath)))).flat();
    const byParent = new Map<string, number>();
    for (const t of tasks) byParent.set(dirname(t.dir), (byParent.get(dirname(t.dir)) ?? 0) + 1);
    const browse = { label: '$(folder-opened) Browse…', dir: '' };
    const sets = await vscode.window.showQuickPick([...[...byParent].sort((a, b) => b[1] - a[1]).map(([dir, n]) => ({ label: vscode.workspace.asRelativePath(dir) || '.', description: `${n} task(s)`, dir })), browse], { title: `${title}: tasks`, ignoreFocusOut: true });
    if (!sets) return undefined;
    let tasksDir = sets.dir;
    if (!tasksDir) {
      const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Evaluate the tasks in this folder', defaultUri: folder.uri });
      if (!picked?.[0]) return undefined;
      tasksDir = picked[0].fsPath;
    }
    const attempts = await vscode.window.showQuickPick(['1', '3', '5', '10'], { title: `${title}: attempts per task (pass@k up to this k)`, ignoreFocusOut: true });
    if (!attempts) return undefined;
    const concurrency = await vscode.window.showQuickPick(['1', '2', '4', '8'], { title: `${title}: trials at a time`, ignoreFocusOut: true });
    if (!concurrency) return undefined;
    const resolved = resolveModel(ctx.settings());
    const model = 'error' in resolved ? undefined : resolved;
    if ('error' in resolved) ctx.output.warn(`[eval] ${resolved.error}`);
    const policies = [
      ...(model?.baseUrl && model.name ? [{ label: `model ${model.name}`, description: model.baseUrl, args: ['--base-url', model.baseUrl, '--model', model.name], profile: model.profile }] : []),
      { label: 'oracle', description: "each task's reference solution (checks the tasks and the harness)", args: ['--policy', 'oracle'], profile: undefined as string | undefined },
    ];
    const policy = policies.length === 1 ? policies[0] : await vscode.window.showQuickPick(policies, { title: `${title}: policy`, ignoreFocusOut: true });
    if (!policy) return undefined;
    const jobDir = join(runsDirOf(folder.uri.fsPath, ctx.settings().eval.jobsDir), stamp());
    const env: Record<string, string> = {};
    const key = policy.args[0] === '--base-url' ? await apiKeyFor(policy.profile, (k) => ctx.extension.secrets.get(k)) : undefined;
    if (key) env.OPENAI_API_KEY = key; // through the environment, never on a command line others can read
    const args = [tasksDir, '--attempts', attempts, '--concurrency', concurrency, '--job-dir', jobDir, ...policy.args];
    const running = ctx.evalJobs.runner.run(args, jobDir, folder.uri.fsPath, `TBRL eval: ${relative(folder.uri.fsPath, tasksDir) || '.'} × ${attempts}`, env);
    ctx.evalJobs.refreshSoon();
    return { jobDir, done: running };
  },
};
