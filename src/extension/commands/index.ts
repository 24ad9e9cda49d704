import * as vscode from 'vscode';
import type { CommandContext, CommandDef } from './context';
import { openTrajectory } from './open-trajectory';
import { runAgent } from './run-agent';
import { runAgentOnWorkspace } from './run-workspace';
import { showTraceGraph } from './show-trace-graph';
import { showStepInspector } from './show-step-inspector';
import { newTask } from './new-task';
import { validateTask } from './validate-task';
import { decide } from './decide';
import { connectCluster, openJobLogs, refreshJobs, stopJob } from './trainer';
import { openChangedFile, selectStep } from './open-changed-file';
import { startTraining } from './start-training';
import { sendDataset } from './send-dataset';
import { synthesizeTasks } from './synthesize-tasks';
import { openTrainerDashboard } from './open-trainer-dashboard';
import { runEvaluation } from './run-evaluation';
import { cancelEvalJob } from './cancel-eval-job';
import { resumeEvalJob } from './resume-eval-job';
import { compareEvalJobs } from './compare-eval-jobs';
import { refreshEvalJobs } from './refresh-eval-jobs';
import { filterRuns, filterTasks, openTaskInstruction, refreshRuns, refreshTasks, setApiKey } from './misc';

/** Every command of the extension; package.json's contributes.commands lists the same ids (a unit test checks). */
export const COMMANDS: readonly CommandDef[] = [runAgent, openTrajectory, showTraceGraph, showStepInspector, newTask, validateTask, decide, setApiKey, refreshTasks, refreshRuns, filterRuns, filterTasks, openTaskInstruction, openChangedFile, selectStep, connectCluster, refreshJobs, stopJob, openJobLogs, startTraining, sendDataset, synthesizeTasks, openTrainerDashboard, runAgentOnWorkspace, runEvaluation, cancelEvalJob, resumeEvalJob, compareEvalJobs, refreshEvalJobs];

export function registerCommands(ctx: CommandContext): void {
  for (const c of COMMANDS) ctx.extension.subscriptions.push(vscode.commands.registerCommand(c.id, (...args: unknown[]) => c.run(ctx, ...args)));
}
