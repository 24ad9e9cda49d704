import * as vscode from 'vscode';
import { writeFile } from 'node:fs/promises';
import { errorMessage } from '../../core/errors';
import { buildBundle } from '../../core/trainer/bundle';
import { secretValuesFromEnv } from '../../core/trainer/secrets';
import { chooseTraining } from '../trainer/choose';
import { TRAINER_TOKEN_SECRET } from '../views/trainer';
import type { CommandContext, CommandDef } from './context';

/**
 * Builds the exact bundle Start Training would submit. Connected: uploads it to the cluster's
 * package store (content-addressed, so a later Start Training with the same choices skips the upload).
 * Not connected: saves the zip to a file, like `tbrl train bundle`.
 */
export const sendDataset: CommandDef = {
  id: 'tbrl.sendDataset',
  async run(ctx: CommandContext) {
    const choice = await chooseTraining(ctx, 'Send Dataset');
    if (!choice) return undefined;
    const client = await ctx.trainer.client();
    let target: vscode.Uri | undefined;
    if (!client) {
      target = await vscode.window.showSaveDialog({ filters: { 'Job bundle': ['zip'] }, saveLabel: 'Save bundle', defaultUri: vscode.workspace.workspaceFolders?.[0] ? vscode.Uri.joinPath(vscode.workspace.workspaceFolders[0].uri, `tbrl-${choice.preset}.zip`) : undefined });
      if (!target) return undefined;
    }
    try {
      return await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'TBRL: send dataset', cancellable: true }, async (progress, cancel) => {
        progress.report({ message: 'building the bundle' });
        // The cluster token must never travel inside the dataset, like any key in the environment.
        const token = (await ctx.extension.secrets.get(TRAINER_TOKEN_SECRET)) ?? undefined;
        const bundle = await buildBundle({ ...choice, secrets: secretValuesFromEnv(process.env, [token]) });
        if (cancel.isCancellationRequested) return undefined;
        const summary = `${bundle.manifest.tasks.length} task(s), ${bundle.manifest.trajectories.length} trajectory(ies), ${(bundle.zip.length / 1024).toFixed(1)} KiB`;
        if (target) {
          await writeFile(target.fsPath, bundle.zip);
          void vscode.window.showInformationMessage(`TBRL: bundle saved to ${target.fsPath} (${summary}); ${bundle.packageUri}.`);
          return target.fsPath;
        }
        progress.report({ message: `uploading ${bundle.packageUri}` });
        const uploaded = await client!.ensurePackage(bundle.packageUri, bundle.zip);
        ctx.output.info(`[train] ${uploaded ? 'uploaded' : 'already on the cluster:'} ${bundle.packageUri} (${summary})`);
        void vscode.window.showInformationMessage(`TBRL: ${uploaded ? 'uploaded' : 'already on the cluster:'} ${bundle.packageUri} (${summary}). Ray keeps an unused package for about 10 minutes; start training within that time to reuse it.`);
        return bundle.packageUri;
      });
    } catch (err) {
      void vscode.window.showErrorMessage(`Send dataset failed: ${errorMessage(err)}`);
      return undefined;
    }
  },
};
