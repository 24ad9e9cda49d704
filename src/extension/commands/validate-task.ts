import * as vscode from 'vscode';
import { validateTask as validate } from '../../core/tasks/validate';
import { recordValidations } from '../../core/tasks/validation-record';
import { DockerSandboxProvider } from '../../core/sandbox/provider';
import { errorMessage } from '../../core/errors';
import type { CommandDef } from './context';
import { pickTask } from './pick';

/** Static checks, image build, oracle scores 1, empty agent scores below 1 — with progress, cancellable. */
export const validateTask: CommandDef = {
  id: 'tbrl.validateTask',
  async run(ctx, arg) {
    const task = await pickTask(arg);
    if (!task) return undefined;
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Validating ${vscode.workspace.asRelativePath(task)}`, cancellable: true }, async (progress, token) => {
      const abort = new AbortController();
      token.onCancellationRequested(() => abort.abort('cancelled'));
      try {
        const r = await validate(task, {
          provider: new DockerSandboxProvider(),
          signal: abort.signal,
          onProgress: (e) => {
            if (e.type === 'stage') {
              progress.report({ message: e.message });
              ctx.output.info(`${e.path}: ${e.message}`);
            }
          },
        });
        // The Tasks view shows the last validation of each task from the folder's record.
        const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(task)) ?? vscode.workspace.workspaceFolders?.[0];
        if (folder) {
          try {
            recordValidations(folder.uri.fsPath, [r]);
            ctx.tasks.refresh();
          } catch (err) {
            ctx.output.warn(`The validation was not recorded in .tbrl/validations.json: ${errorMessage(err)}`);
          }
        }
        for (const p of r.problems) ctx.output.error(p);
        for (const w of r.warnings) ctx.output.warn(w);
        const summary = `${r.id ?? task}: ${r.valid ? 'valid' : 'INVALID'} (oracle ${r.oracle.score ?? r.oracle.status}, empty agent ${r.empty.score ?? r.empty.status})`;
        ctx.output.info(summary);
        if (r.valid) void vscode.window.showInformationMessage(summary);
        else void vscode.window.showErrorMessage(`${summary}: ${r.problems[0]?.split('\n')[0] ?? 'see the TBRL Studio output'}`, 'Show output').then((c) => c && ctx.output.show());
        return r;
      } catch (err) {
        if (token.isCancellationRequested) return undefined;
        void vscode.window.showErrorMessage(`Validation failed: ${errorMessage(err)}`);
        return undefined;
      }
    });
  },
};
