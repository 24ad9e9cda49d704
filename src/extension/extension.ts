import * as vscode from 'vscode';
import { readSettings, type TbrlSettings } from './settings';
import { registerDebugger } from './debug/register';
import { DebugTracker } from './debug/tracker';
import { registerCommands } from './commands/index';
import { TasksProvider } from './views/tasks';
import { RunsProvider } from './views/runs';
import { TrainerProvider } from './views/trainer';
import { EvalJobsProvider } from './views/jobs';
import { EvalRunner } from './eval/runner';
import { registerAttribution } from './attribution/register';

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('TBRL Studio', { log: true });
  context.subscriptions.push(output);

  let cached: TbrlSettings | undefined;
  const settings = (): TbrlSettings => {
    if (cached) return cached;
    const config = vscode.workspace.getConfiguration('tbrl');
    const { settings: s, problems } = readSettings((k) => config.get(k));
    for (const p of problems) output.warn(p);
    // The core's Docker client reads DOCKER_HOST; the setting is the editor's way to set it.
    if (s.docker.socketPath) process.env.DOCKER_HOST = s.docker.socketPath.includes('://') ? s.docker.socketPath : `unix://${s.docker.socketPath}`;
    return (cached = s);
  };
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('tbrl')) {
      cached = undefined;
      if (e.affectsConfiguration('tbrl.trainer.url')) trainer.refresh();
    }
  }));

  const tracker = new DebugTracker();
  const tasks = new TasksProvider(() => settings().runsDir, output);
  const runs = new RunsProvider(() => settings().runsDir);
  const trainer = new TrainerProvider(() => settings().trainer.url, context.secrets);
  const evalJobs = new EvalJobsProvider(() => settings().eval.jobsDir, new EvalRunner(context.extensionPath, output));
  context.subscriptions.push(
    tracker,
    trainer,
    vscode.window.registerTreeDataProvider('tbrl.tasks', tasks),
    vscode.window.registerTreeDataProvider('tbrl.runs', runs),
    vscode.window.registerTreeDataProvider('tbrl.trainer', trainer),
    evalJobs.runner,
    evalJobs,
    vscode.window.createTreeView('tbrl.evalJobs', { treeDataProvider: evalJobs, canSelectMany: true }),
    vscode.debug.onDidTerminateDebugSession((s) => s.type === 'tbrl' && (runs.refresh(), tasks.refresh())),
  );
  const watcher = vscode.workspace.createFileSystemWatcher('**/{task.yaml,task.toml,trajectory.jsonl}');
  watcher.onDidCreate(() => (tasks.refresh(), runs.refresh()));
  watcher.onDidDelete(() => (tasks.refresh(), runs.refresh()));
  context.subscriptions.push(watcher);

  registerDebugger(context, settings);
  registerAttribution(context, output);
  registerCommands({ extension: context, output, settings, tasks, runs, trainer, evalJobs, tracker });
  output.info('TBRL Studio activated');
}

export function deactivate(): void {}
