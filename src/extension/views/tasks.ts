import * as vscode from 'vscode';
import { findTasks, type TaskEntry } from '../discover';

/** Task directories (Terminal-Bench task.yaml / Harbor task.toml) in the workspace folders. */
export class TasksProvider implements vscode.TreeDataProvider<TaskEntry> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  refresh(): void {
    this.changed.fire();
  }

  async getChildren(): Promise<TaskEntry[]> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    return (await Promise.all(folders.map((f) => findTasks(f.uri.fsPath)))).flat();
  }

  getTreeItem(t: TaskEntry): vscode.TreeItem {
    const item = new vscode.TreeItem(t.name, vscode.TreeItemCollapsibleState.None);
    item.description = t.format;
    item.tooltip = t.dir;
    item.contextValue = 'tbrlTask';
    item.iconPath = new vscode.ThemeIcon('beaker');
    item.resourceUri = vscode.Uri.file(t.dir);
    item.command = { command: 'tbrl.openTaskInstruction', title: 'Open instruction', arguments: [t] };
    return item;
  }
}
