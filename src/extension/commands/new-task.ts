import * as vscode from 'vscode';
import { join } from 'node:path';
import { scaffoldTask } from '../../core/tasks/scaffold';
import { TASK_FORMATS } from '../../core/tasks/formats';
import { errorMessage } from '../../core/errors';
import type { CommandDef } from './context';

/** Wizard: name, format, instruction → a task dir that validates as it is. */
export const newTask: CommandDef = {
  id: 'tbrl.newTask',
  async run(ctx) {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      void vscode.window.showWarningMessage('Open a folder first: the task is created inside the workspace.');
      return undefined;
    }
    const name = await vscode.window.showInputBox({
      prompt: 'Task directory (relative to the workspace)',
      value: 'tasks/my-task',
      validateInput: (v) => (/^[A-Za-z0-9._/-]+$/.test(v) && !v.split('/').includes('..') ? undefined : 'Use letters, digits, ".", "_", "-" and "/" (e.g. tasks/parse-logs).'),
    });
    if (!name) return undefined;
    const format = await vscode.window.showQuickPick(
      TASK_FORMATS.map((f) => ({ label: f.id, description: f.summary })),
      { placeHolder: 'Task format' },
    );
    if (!format) return undefined;
    const instruction = await vscode.window.showInputBox({ prompt: 'Instruction for the agent (edit it later in the task files)', placeHolder: 'Leave empty for the template instruction' });
    try {
      const result = await scaffoldTask(join(folder.uri.fsPath, name), { format: format.label, ...(instruction ? { instruction } : {}) });
      ctx.output.info(`Created ${result.dir} (${result.format}): ${result.files.join(', ')}`);
      ctx.tasks.refresh();
      const main = result.files.find((f) => /task\.(yaml|toml)$|instruction\.md$/.test(f));
      if (main) await vscode.window.showTextDocument(vscode.Uri.file(join(result.dir, main)));
      return result.dir;
    } catch (err) {
      void vscode.window.showErrorMessage(`New task failed: ${errorMessage(err)}`);
      return undefined;
    }
  },
};
