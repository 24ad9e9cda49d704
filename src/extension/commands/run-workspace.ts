import * as vscode from 'vscode';
import { basename, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { runWorkspace, type RunWorkspaceResult } from '../../core/run/run-workspace';
import { saveWorkspaceRunAsTask } from '../../core/run/save-task';
import { changeText, planPatchOnFolder, writeChanges, type FileChange } from '../../core/run/workspace-patch';
import { errorMessage } from '../../core/errors';
import { apiKeyFor, resolveModel } from '../settings';
import type { CommandContext, CommandDef } from './context';

/** Virtual documents holding both sides of each changed file, so the diff never reads the container. */
const SCHEME = 'tbrl-change';
const contents = new Map<string, string>();
let providerRegistered = false;

function ensureProvider(ctx: CommandContext): void {
  if (providerRegistered) return;
  providerRegistered = true;
  ctx.extension.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(SCHEME, { provideTextDocumentContent: (uri) => contents.get(uri.toString()) ?? '' }));
}

function virtualUri(runId: string, side: 'before' | 'after', path: string, text: string): vscode.Uri {
  // Both sides share the file's path (the side is in the query): the changes editor shows a pair
  // whose paths differ as a rename, "after R before".
  const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${path}`, query: `run=${encodeURIComponent(runId)}&side=${side}` });
  contents.set(uri.toString(), text);
  return uri;
}

async function pickFolder(arg: unknown): Promise<vscode.WorkspaceFolder | undefined> {
  if (arg instanceof vscode.Uri) return vscode.workspace.getWorkspaceFolder(arg);
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length <= 1) return folders[0];
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'Project to run the agent on' });
}

async function showChanges(folder: vscode.WorkspaceFolder, r: RunWorkspaceResult, plan: FileChange[]): Promise<void> {
  const resources = plan.map((c) => {
    const file = vscode.Uri.joinPath(folder.uri, c.path);
    return [file, virtualUri(r.runId, 'before', c.path, changeText(c.before)), virtualUri(r.runId, 'after', c.path, changeText(c.after))] as const;
  });
  await vscode.commands.executeCommand('vscode.changes', `Agent changes (${r.runId})`, resources);
}

async function saveAsTask(ctx: CommandContext, folder: vscode.WorkspaceFolder, r: RunWorkspaceResult): Promise<void> {
  const parent = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, defaultUri: folder.uri, openLabel: 'Save task here' });
  if (!parent?.[0]) return;
  const name = await vscode.window.showInputBox({
    prompt: 'Name of the new task folder',
    value: `${basename(folder.uri.fsPath)}-task`,
    validateInput: (v) => (!/^[A-Za-z0-9._-]+$/.test(v) ? 'Letters, digits, ".", "_" and "-" only' : existsSync(join(parent[0].fsPath, v)) ? 'That folder already exists' : undefined),
  });
  if (!name) return;
  const dir = join(parent[0].fsPath, name);
  const saved = await saveWorkspaceRunAsTask(r.outDir, dir);
  for (const w of saved.warnings) ctx.output.warn(w);
  ctx.tasks.refresh();
  const choice = await vscode.window.showInformationMessage(`Saved the run as a task in ${dir}.`, 'Validate', 'Open task');
  if (choice === 'Validate') await vscode.commands.executeCommand('tbrl.validateTask', dir);
  if (choice === 'Open task') await vscode.window.showTextDocument(vscode.Uri.file(join(dir, 'task.yaml')));
}

/**
 * The agent on the open project, in its devcontainer with the workspace copied in: the user sees
 * the changes as a multi-file diff and applies or discards them; "Save as task…" keeps the run as a task.
 */
export const runAgentOnWorkspace: CommandDef = {
  id: 'tbrl.runAgentOnWorkspace',
  async run(ctx, arg) {
    const folder = await pickFolder(arg);
    if (!folder) {
      void vscode.window.showErrorMessage('Open a project folder (with .devcontainer/devcontainer.json) first.');
      return undefined;
    }
    const s = ctx.settings();
    const m = resolveModel(s);
    if ('error' in m || !m.baseUrl || !m.name) {
      const c = await vscode.window.showErrorMessage('Running the agent on your project needs a model: set tbrl.model.profile (a profile of tbrl.model.profiles) or tbrl.model.baseUrl and tbrl.model.name (the oracle only replays a task\'s reference solution).', 'Open Settings');
      if (c) await vscode.commands.executeCommand('workbench.action.openSettings', 'tbrl.model');
      return undefined;
    }
    const instruction = await vscode.window.showInputBox({ prompt: `What should the agent do in ${folder.name}?`, placeHolder: 'e.g. make the failing test in tests/test_parse.py pass', ignoreFocusOut: true, validateInput: (v) => (v.trim() ? undefined : 'Say what the agent should do') });
    if (!instruction) return undefined;
    const verifyCommand = await vscode.window.showInputBox({ prompt: 'Verify command run in the container afterwards (exit 0 = reward 1). Leave empty for none.', placeHolder: 'e.g. python -m pytest -q', ignoreFocusOut: true });
    if (verifyCommand === undefined) return undefined;
    const apiKey = await apiKeyFor(m.profile, (k) => ctx.extension.secrets.get(k));

    const r = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Agent on ${folder.name}`, cancellable: true }, async (progress, token) => {
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort('cancelled'));
      try {
        const { result, error } = await runWorkspace({
          workspaceFolder: folder.uri.fsPath,
          instruction,
          verifyCommand: verifyCommand.trim() || undefined,
          baseUrl: m.baseUrl,
          model: m.name,
          apiKey,
          n: m.n,
          temperature: m.temperature,
          allowPrivileges: s.sandbox.allowPrivileges,
          ...(m.verifier !== 'none' ? { verifier: m.verifier } : {}),
          maxSteps: s.limits.maxSteps,
          maxTimeSec: s.limits.maxTimeSec,
          runsDir: resolve(folder.uri.fsPath, s.runsDir),
          cwd: folder.uri.fsPath,
          signal: abort.signal,
          onProgress: (e) => {
            if (e.type === 'phase' || e.type === 'info') {
              progress.report({ message: e.message });
              ctx.output.info(e.message);
            } else if (e.type === 'step-start') progress.report({ message: `step ${e.step}` });
            else if (e.type === 'warning') ctx.output.warn(e.message);
          },
        });
        if (error) throw error;
        return result;
      } catch (err) {
        if (!token.isCancellationRequested) void vscode.window.showErrorMessage(`The agent run failed: ${errorMessage(err)}`, 'Show output').then((c) => c && ctx.output.show());
        return undefined;
      }
    });
    if (!r) return undefined;
    ctx.runs.refresh();
    const reward = r.footer.reward ? `reward ${r.footer.reward.total}` : 'no verify command';
    if (!r.changes) {
      void vscode.window.showInformationMessage(`The agent changed nothing (${r.footer.endReason}, ${reward}).`);
      return r;
    }
    let plan: FileChange[];
    try {
      plan = planPatchOnFolder(folder.uri.fsPath, r.changes);
    } catch (err) {
      void vscode.window.showErrorMessage(`The changes cannot be shown against the workspace: ${errorMessage(err)} (the patch is in ${r.changesPath}).`);
      return r;
    }
    ensureProvider(ctx);
    await showChanges(folder, r, plan);
    for (;;) {
      const choice = await vscode.window.showInformationMessage(`The agent changed ${plan.length} file(s) (${r.footer.endReason}, ${reward}).`, 'Apply to workspace', 'Discard', 'Save as task…');
      try {
        if (choice === 'Apply to workspace') {
          // Exactly the plan the diff showed; a file edited while the diff was open refuses the write.
          writeChanges(folder.uri.fsPath, plan);
          void vscode.window.showInformationMessage(`Applied the agent's changes to ${plan.length} file(s).`);
          return r;
        }
        if (choice === 'Save as task…') {
          await saveAsTask(ctx, folder, r);
          continue;
        }
        if (choice === 'Discard') void vscode.window.showInformationMessage(`Discarded the agent's changes: ${folder.name} is unchanged (the run stays in ${vscode.workspace.asRelativePath(r.outDir)}).`);
        return r;
      } catch (err) {
        void vscode.window.showErrorMessage(errorMessage(err));
        if (choice === 'Apply to workspace') return r;
      }
    }
  },
};
