import * as vscode from 'vscode';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../../core/errors';
import { loadJob, type LoadedJob } from '../../core/eval/compare';
import { TRIALS_DIR, trialDir, type TaskResult, type TrialRecord } from '../../core/eval/job';
import { jobDescription, pct, summariseJob, taskDescription, trialDescription, type JobSummaryView } from '../../core/eval/view-model';
import { runsDirOf } from '../discover';
import type { EvalRunner } from '../eval/runner';

export type EvalJobNode =
  | { kind: 'job'; loaded: LoadedJob; summary: JobSummaryView }
  | { kind: 'task'; loaded: LoadedJob; task: TaskResult }
  | { kind: 'trial'; loaded: LoadedJob; record: TrialRecord }
  | { kind: 'broken'; dir: string; message: string };

/** Where a trial's trajectory is (trial.json names it relative to the trial directory). */
export function trialTrajectory(jobDir: string, record: Pick<TrialRecord, 'trial' | 'trajectory'>): string {
  return join(trialDir(jobDir, record.trial), record.trajectory ?? 'trajectory.jsonl');
}

/** Job directories (with job.json) directly under `root`, newest first. */
export function findJobDirs(root: string): string[] {
  if (!existsSync(root)) return [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  return names
    .map((n) => join(root, n))
    .filter((d) => existsSync(join(d, 'job.json')))
    .map((d) => ({ d, t: statSync(join(d, 'job.json')).mtimeMs }))
    .sort((a, b) => b.t - a.t || (a.d < b.d ? 1 : -1))
    .map((x) => x.d);
}

/** Trial directories without a trial.json: the trials a running job is working on. */
function inFlight(loaded: LoadedJob): number {
  const root = join(loaded.dir, TRIALS_DIR);
  if (!existsSync(root)) return 0;
  return readdirSync(root).filter((n) => !loaded.trials.has(n)).length;
}

/**
 * `tbrl eval` jobs under the workspace's jobs folder: job → tasks → trials. Rates come from the
 * core's own computeResults over the trial.json files, so a job that is still running (or was
 * killed before writing results.json) shows what is on disk. File changes are debounced.
 */
export class EvalJobsProvider implements vscode.TreeDataProvider<EvalJobNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  private timer?: ReturnType<typeof setTimeout>;

  constructor(private readonly jobsDir: () => string, readonly runner: EvalRunner) {
    const watcher = vscode.workspace.createFileSystemWatcher('**/{job.json,results.json,trial.json}');
    const soon = (): void => this.refreshSoon();
    this.disposables.push(watcher, watcher.onDidCreate(soon), watcher.onDidChange(soon), watcher.onDidDelete(soon), runner.onDidChange(() => this.refreshSoon()));
  }

  refresh(): void {
    this.changed.fire();
  }

  /** Many trials can end at once: one redraw per half second at most. */
  refreshSoon(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.refresh();
    }, 500);
  }

  jobDirs(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).flatMap((f) => findJobDirs(runsDirOf(f.uri.fsPath, this.jobsDir())));
  }

  loadAll(): EvalJobNode[] {
    return this.jobDirs().map((dir): EvalJobNode => {
      try {
        const loaded = loadJob(dir);
        const running = this.runner.isRunning(dir) ? this.runner.runningTrials(dir) ?? inFlight(loaded) : 0;
        return { kind: 'job', loaded, summary: summariseJob(dir, loaded.label, loaded.results, running) };
      } catch (err) {
        return { kind: 'broken', dir, message: errorMessage(err) };
      }
    });
  }

  getChildren(node?: EvalJobNode): EvalJobNode[] {
    if (!node) return this.loadAll();
    if (node.kind === 'job') return node.loaded.results.tasks.map((task) => ({ kind: 'task', loaded: node.loaded, task }));
    if (node.kind === 'task') {
      return [...node.loaded.trials.values()].filter((r) => r.task === node.task.task).sort((a, b) => a.attempt - b.attempt).map((record) => ({ kind: 'trial', loaded: node.loaded, record }));
    }
    return [];
  }

  getTreeItem(node: EvalJobNode): vscode.TreeItem {
    switch (node.kind) {
      case 'broken': {
        const item = new vscode.TreeItem(vscode.workspace.asRelativePath(node.dir), vscode.TreeItemCollapsibleState.None);
        item.description = 'unreadable';
        item.tooltip = node.message;
        item.iconPath = new vscode.ThemeIcon('warning');
        return item;
      }
      case 'job': {
        const s = node.summary;
        const running = this.runner.isRunning(s.dir);
        const item = new vscode.TreeItem(s.name, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `evaljob:${s.dir}`;
        item.description = jobDescription(s);
        const run = node.loaded.job.run;
        item.tooltip = [s.dir, `${node.loaded.job.tasks.length} task(s) × ${run.attempts} attempt(s)`, `policy ${run.policy ?? 'model'}${run.model ? ` · ${run.model}` : ''}`, `pass@1 ${pct(s.passAt1)}`, running ? 'running (Cancel stops it; Resume continues)' : s.complete ? 'complete' : 'incomplete: Resume runs the missing trials'].join('\n');
        item.contextValue = running ? 'tbrlEvalJobRunning' : s.complete ? 'tbrlEvalJobComplete' : 'tbrlEvalJobIncomplete';
        item.iconPath = new vscode.ThemeIcon(running ? 'sync~spin' : s.complete ? 'beaker' : 'debug-pause');
        item.resourceUri = vscode.Uri.file(s.dir);
        return item;
      }
      case 'task': {
        const t = node.task;
        const item = new vscode.TreeItem(t.task, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `evaltask:${node.loaded.dir}:${t.task}`;
        item.description = taskDescription(t, node.loaded.job.run.attempts);
        item.contextValue = 'tbrlEvalTask';
        item.iconPath = new vscode.ThemeIcon(t.scored === 0 ? 'circle-outline' : t.passed === t.scored ? 'pass' : t.passed === 0 ? 'error' : 'circle-large-outline');
        return item;
      }
      case 'trial': {
        const r = node.record;
        const trajectory = trialTrajectory(node.loaded.dir, r);
        const item = new vscode.TreeItem(`#${r.attempt}`, vscode.TreeItemCollapsibleState.None);
        item.id = `evaltrial:${node.loaded.dir}:${r.trial}`;
        item.description = trialDescription(r);
        item.tooltip = [r.trial, r.outcome.cause ?? '', r.endReason ?? '', trajectory].filter(Boolean).join('\n');
        item.contextValue = 'tbrlEvalTrial';
        item.iconPath = new vscode.ThemeIcon(r.outcome.class === 'passed' ? 'pass' : r.outcome.class === 'failed' ? 'error' : 'warning');
        item.command = { command: 'tbrl.openTrajectory', title: 'Replay in the debugger', arguments: [vscode.Uri.file(trajectory)] };
        return item;
      }
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
    this.changed.dispose();
  }
}
