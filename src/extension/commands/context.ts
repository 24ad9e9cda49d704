import type * as vscode from 'vscode';
import type { TbrlSettings } from '../settings';
import type { TasksProvider } from '../views/tasks';
import type { RunsProvider } from '../views/runs';
import type { TrainerProvider } from '../views/trainer';
import type { EvalJobsProvider } from '../views/jobs';
import type { DebugTracker } from '../debug/tracker';

/** What every command may use; built once in activate(). */
export interface CommandContext {
  extension: vscode.ExtensionContext;
  output: vscode.LogOutputChannel;
  settings(): TbrlSettings;
  tasks: TasksProvider;
  runs: RunsProvider;
  trainer: TrainerProvider;
  evalJobs: EvalJobsProvider;
  tracker: DebugTracker;
}

export interface CommandDef {
  id: string;
  run(ctx: CommandContext, ...args: unknown[]): unknown;
}
