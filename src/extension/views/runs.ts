import * as vscode from 'vscode';
import { filterRuns, findRuns, runsDirOf, type RunEntry } from '../discover';

/** Trajectories under the runs directory with reward, pass and steps; filterable. */
export class RunsProvider implements vscode.TreeDataProvider<RunEntry> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private filter = '';

  constructor(private readonly runsDir: () => string) {}

  refresh(): void {
    this.changed.fire();
  }

  setFilter(query: string): void {
    this.filter = query;
    void vscode.commands.executeCommand('setContext', 'tbrl.runsFiltered', query.trim() !== '');
    this.refresh();
  }

  get currentFilter(): string {
    return this.filter;
  }

  async getChildren(): Promise<RunEntry[]> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const dir = this.runsDir();
    const all = (await Promise.all(folders.map((f) => findRuns(runsDirOf(f.uri.fsPath, dir))))).flat();
    return this.filter ? filterRuns(all, this.filter) : all;
  }

  getTreeItem(r: RunEntry): vscode.TreeItem {
    const item = new vscode.TreeItem(`${r.taskId} · ${r.startedAt.replace('T', ' ').slice(0, 19)}`, vscode.TreeItemCollapsibleState.None);
    item.description = r.steps === undefined ? 'unfinished' : `${r.pass ? 'pass' : 'fail'} · reward ${r.reward?.toFixed(3) ?? '-'} · ${r.steps} steps`;
    item.tooltip = `${r.runId}\npolicy ${r.policy}\n${r.endReason ?? 'no footer'}\n${r.trajectory}`;
    item.contextValue = 'tbrlRun';
    item.iconPath = new vscode.ThemeIcon(r.steps === undefined ? 'circle-outline' : r.pass ? 'pass' : 'error');
    item.resourceUri = vscode.Uri.file(r.trajectory);
    item.command = { command: 'tbrl.openTrajectory', title: 'Replay in the debugger', arguments: [vscode.Uri.file(r.trajectory)] };
    return item;
  }
}
