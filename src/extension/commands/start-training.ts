import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import { submitTraining } from '../../core/trainer/submit';
import { TRAINER_TOKEN_SECRET } from '../views/trainer';
import { chooseTraining } from '../trainer/choose';
import { TrainerDashboard } from '../trainer/dashboard';
import type { CommandContext, CommandDef } from './context';

/** Bundle the chosen tasks and trajectories, upload, submit to the connected Ray cluster, open the dashboard. */
export const startTraining: CommandDef = {
  id: 'tbrl.startTraining',
  async run(ctx: CommandContext) {
    const url = ctx.settings().trainer.url;
    if (!url) {
      void vscode.window.showWarningMessage('Not connected to a cluster: run "TBRL: Connect to Cluster" first (or "TBRL: Send Dataset" to save the bundle to a file).');
      return undefined;
    }
    const choice = await chooseTraining(ctx, 'Start Training');
    if (!choice) return undefined;
    const token = (await ctx.extension.secrets.get(TRAINER_TOKEN_SECRET)) ?? undefined;
    try {
      const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'TBRL: start training', cancellable: true }, async (progress, cancel) => {
        const abort = new AbortController();
        cancel.onCancellationRequested(() => abort.abort());
        return submitTraining({
          cluster: { url, token, timeoutMs: 120_000 },
          ...choice,
          onProgress: (m) => {
            ctx.output.info(`[train] ${m}`);
            progress.report({ message: m });
            // Between steps is the only safe place to stop: a half-sent submit is found again by its id.
            if (abort.signal.aborted) throw new vscode.CancellationError();
          },
        });
      });
      ctx.trainer.refresh();
      void vscode.window.showInformationMessage(`TBRL: ${result.existed ? 'job already exists' : 'submitted'} ${result.submissionId} (${result.job.status}).`);
      TrainerDashboard.show(ctx, result.submissionId);
      return result.submissionId;
    } catch (err) {
      if (err instanceof vscode.CancellationError) return undefined;
      void vscode.window.showErrorMessage(`Start training failed: ${errorMessage(err)}`);
      return undefined;
    }
  },
};
