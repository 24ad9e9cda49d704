import * as vscode from 'vscode';
import { findRuns, findTasks, runsDirOf, type TaskEntry } from '../discover';
import { readValidations } from '../../core/tasks/validation-record';
import { taskStatus, type TaskStatus } from './task-status';
import { readTaskLabels, taskMatchesFilter } from '../../core/synth/coverage';

export type TaskNode = TaskEntry & { status: TaskStatus };

const ICON_COLOUR: Record<TaskStatus['state'], string | undefined> = { valid: 'testing.iconPassed', invalid: 'testing.iconFailed', unvalidated: undefined };

/**
 * Task directories (Terminal-Bench task.yaml / Harbor task.toml) in the workspace folders, each with
 * its last validation (`.tbrl/validations.json`) and the reward of its latest finished run.
 */
export class TasksProvider implements vscode.TreeDataProvider<TaskNode> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly runsDir: () => string, private readonly output?: vscode.LogOutputChannel) {}

  private filter = '';

  refresh(): void {
    this.changed.fire();
  }

  /** Filter by name or coverage label: `field=quantum`, `faultClasses=stale-cache`, `scale=small`, or plain words. */
  setFilter(query: string): void {
    this.filter = query;
    void vscode.commands.executeCommand('setContext', 'tbrl.tasksFiltered', query.trim() !== '');
    this.refresh();
  }

  get currentFilter(): string {
    return this.filter;
  }

  async getChildren(): Promise<TaskNode[]> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const perFolder = await Promise.all(folders.map(async (f) => {
      const root = f.uri.fsPath;
      const [tasks, runs] = await Promise.all([findTasks(root), findRuns(runsDirOf(root, this.runsDir()))]);
      const { records, problem } = readValidations(root);
      if (problem) this.output?.warn(problem);
      return tasks.map((t) => ({ ...t, status: taskStatus(t, records.get(t.dir), runs) }));
    }));
    const all = perFolder.flat();
    if (!this.filter.trim()) return all;
    const labelled = await Promise.all(all.map(async (t) => ({ t, labels: await readTaskLabels(t.dir) })));
    return labelled.filter(({ t, labels }) => taskMatchesFilter(t.name, labels, this.filter)).map(({ t }) => t);
  }

  getTreeItem(t: TaskNode): vscode.TreeItem {
    const item = new vscode.TreeItem(t.name, vscode.TreeItemCollapsibleState.None);
    item.description = t.status.description;
    item.tooltip = t.status.tooltip.join('\n');
    item.contextValue = 'tbrlTask';
    const colour = ICON_COLOUR[t.status.state];
    item.iconPath = new vscode.ThemeIcon('beaker', colour ? new vscode.ThemeColor(colour) : undefined);
    item.resourceUri = vscode.Uri.file(t.dir);
    item.command = { command: 'tbrl.openTaskInstruction', title: 'Open instruction', arguments: [t] };
    return item;
  }
}
