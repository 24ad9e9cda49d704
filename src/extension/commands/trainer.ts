import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import { RayJobsClient } from '../../core/trainer/jobs';
import { TRAINER_TOKEN_SECRET } from '../views/trainer';
import type { CommandContext, CommandDef } from './context';

function jobId(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && 'job' in arg) return (arg as { job: { submission_id: string } }).job.submission_id;
  return undefined;
}

async function clientOrWarn(ctx: CommandContext): Promise<RayJobsClient | undefined> {
  const c = await ctx.trainer.client();
  if (!c) void vscode.window.showWarningMessage('Not connected to a cluster: run "TBRL: Connect to Cluster" first.');
  return c;
}

/** Dashboard URL into settings (tbrl.trainer.url), token into SecretStorage; checks the Ray version. */
export const connectCluster: CommandDef = {
  id: 'tbrl.connectCluster',
  async run(ctx) {
    const url = await vscode.window.showInputBox({ prompt: 'Ray dashboard URL (the Jobs API lives there)', value: ctx.settings().trainer.url || 'http://127.0.0.1:8265', ignoreFocusOut: true });
    if (!url) return false;
    const token = await vscode.window.showInputBox({ prompt: 'Bearer token (empty for none); kept in SecretStorage', password: true, ignoreFocusOut: true });
    if (token === undefined) return false;
    if (token) await ctx.extension.secrets.store(TRAINER_TOKEN_SECRET, token);
    else await ctx.extension.secrets.delete(TRAINER_TOKEN_SECRET);
    try {
      await new RayJobsClient({ url, token: token || undefined, timeoutMs: 10_000 }).list();
    } catch (err) {
      void vscode.window.showErrorMessage(`Cannot reach the cluster at ${url}: ${errorMessage(err)}`);
      return false;
    }
    await vscode.workspace.getConfiguration('tbrl').update('trainer.url', url, vscode.ConfigurationTarget.Workspace);
    ctx.trainer.refresh();
    void vscode.window.showInformationMessage(`TBRL: connected to ${url}.`);
    return true;
  },
};

export const refreshJobs: CommandDef = { id: 'tbrl.refreshJobs', run: (ctx) => ctx.trainer.refresh() };

export const stopJob: CommandDef = {
  id: 'tbrl.stopJob',
  async run(ctx, arg) {
    const client = await clientOrWarn(ctx);
    const id = jobId(arg) ?? (await vscode.window.showInputBox({ prompt: 'Submission id of the job to stop' }));
    if (!client || !id) return false;
    try {
      const stopped = await client.stop(id);
      void vscode.window.showInformationMessage(stopped ? `TBRL: stopping ${id}.` : `TBRL: ${id} was not running.`);
      ctx.trainer.refresh();
      return stopped;
    } catch (err) {
      void vscode.window.showErrorMessage(`Stop ${id} failed: ${errorMessage(err)}`);
      return false;
    }
  },
};

export const openJobLogs: CommandDef = {
  id: 'tbrl.openJobLogs',
  async run(ctx, arg) {
    const client = await clientOrWarn(ctx);
    const id = jobId(arg);
    if (!client || !id) return undefined;
    try {
      const doc = await vscode.workspace.openTextDocument({ content: await client.logs(id), language: 'log' });
      return vscode.window.showTextDocument(doc, { preview: true });
    } catch (err) {
      void vscode.window.showErrorMessage(`Logs of ${id}: ${errorMessage(err)}`);
      return undefined;
    }
  },
};
