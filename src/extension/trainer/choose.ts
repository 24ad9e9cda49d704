import * as vscode from 'vscode';
import { isAbsolute, join } from 'node:path';
import { findRuns, findTasks } from '../discover';
import { algorithmNames, loadAlgorithms, type Algorithm } from '../../core/trainer/estimators';
import { loadPresets } from '../../core/trainer/presets';
import type { CommandContext } from '../commands/context';
import { parseOverrides, taskItems, trajectoryItems, type PickItem } from './selection';

export interface TrainingChoices {
  preset: string;
  algorithm: Algorithm;
  taskDirs: string[];
  trajectories: string[];
  overrides: string[];
}

/**
 * The questions Start Training and Send Dataset share: preset, algorithm, trajectories (pre-picked by
 * a Runs-view filter), tasks, overrides. Undefined when the user cancels any of them.
 */
export async function chooseTraining(ctx: CommandContext, title: string): Promise<TrainingChoices | undefined> {
  const presets = loadPresets();
  const preset = await vscode.window.showQuickPick(
    Object.entries(presets).map(([name, p]) => ({ label: name, description: p.gpu ? 'GPU' : 'CPU', detail: p.description })),
    { title: `${title}: preset`, ignoreFocusOut: true },
  );
  if (!preset) return undefined;
  const algorithm = await vscode.window.showQuickPick(
    algorithmNames().map((a) => ({ label: a, detail: loadAlgorithms()[a].description })),
    { title: `${title}: algorithm`, ignoreFocusOut: true },
  );
  if (!algorithm) return undefined;

  const folders = vscode.workspace.workspaceFolders ?? [];
  const dir = ctx.settings().runsDir;
  const runs = (await Promise.all(folders.map((f) => findRuns(isAbsolute(dir) ? dir : join(f.uri.fsPath, dir))))).flat();
  let trajectories: string[] = [];
  if (runs.length) {
    const filter = await vscode.window.showInputBox({
      title: `${title}: filter trajectories`,
      prompt: 'Runs view filter syntax: words match task/run/policy; pass, fail, unfinished; reward>=0.5; text:foo. Empty picks every finished run.',
      value: ctx.runs.currentFilter,
      ignoreFocusOut: true,
    });
    if (filter === undefined) return undefined;
    const picked = await pickMany(await trajectoryItems(runs, filter), `${title}: trajectories (${runs.length} runs)`);
    if (!picked) return undefined;
    trajectories = picked;
  }
  const tasks = (await Promise.all(folders.map((f) => findTasks(f.uri.fsPath)))).flat();
  const taskDirs = tasks.length ? await pickMany(taskItems(tasks, runs, trajectories), `${title}: tasks`) : [];
  if (!taskDirs) return undefined;
  if (taskDirs.length === 0 && trajectories.length === 0) {
    void vscode.window.showWarningMessage('Nothing to train on: pick at least one task or trajectory (create a task with "TBRL: New Task" or "TBRL: Synthesize Tasks").');
    return undefined;
  }
  const overrides = await vscode.window.showInputBox({
    title: `${title}: overrides (optional)`,
    prompt: 'Hydra overrides for verl/rLLM, key=value separated by spaces, e.g. trainer.total_training_steps=20 actor_rollout_ref.actor.optim.lr=1e-6',
    ignoreFocusOut: true,
  });
  if (overrides === undefined) return undefined;
  return { preset: preset.label, algorithm: algorithm.label, taskDirs, trajectories, overrides: parseOverrides(overrides) };
}

async function pickMany(items: PickItem[], title: string): Promise<string[] | undefined> {
  const picked = await vscode.window.showQuickPick(items, { title, canPickMany: true, ignoreFocusOut: true, matchOnDetail: true });
  return picked?.map((p) => p.value);
}
