import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import { RayJobsClient, type JobDetails } from '../../core/trainer/jobs';
import { isActiveJob, newestFirst } from '../trainer/jobs-view';
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

/**
 * The job a command acts on: the Trainer view item or id it was given, else a pick of the cluster's
 * jobs (newest first; `only` narrows them). Says why when there is nothing to pick.
 */
export async function jobFromArgOrPick(ctx: CommandContext, arg: unknown, title: string, only: (j: JobDetails) => boolean = () => true): Promise<{ client: RayJobsClient; id: string } | undefined> {
  const client = await clientOrWarn(ctx);
  if (!client) return undefined;
  const given = jobId(arg);
  if (given) return { client, id: given };
  let jobs: JobDetails[];
  try {
    jobs = newestFirst((await client.list()).filter(only));
  } catch (err) {
    void vscode.window.showErrorMessage(`Cannot list the jobs of ${ctx.settings().trainer.url}: ${errorMessage(err)}`);
    return undefined;
  }
  if (jobs.length === 0) {
    void vscode.window.showInformationMessage(`TBRL: no job on ${ctx.settings().trainer.url} to pick for ${title}.`);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(jobs.map((j) => ({ label: j.submission_id, description: j.status, detail: j.entrypoint })), { title, matchOnDescription: true });
  return pick ? { client, id: pick.label } : undefined;
}

/** Dashboard URL into settings (tbrl.trainer.url), token into SecretStorage; checks the Ray version. */
export const connectCluster: CommandDef = {
  id: 'tbrl.connectCluster',
  async run(ctx) {
    const url = await vscode.window.showInputBox({ prompt: 'Ray dashboard URL (the Jobs API lives there)', value: ctx.settings().trainer.url || 'http://127.0.0.1:8265', ignoreFocusOut: true });
    if (!url) return false;
    const token = await vscode.window.showInputBox({ prompt: 'Bearer token (empty for none); kept in SecretStorage', password: true, ignoreFocusOut: true });
    if (token === undefined) return false;
    try {
      await new RayJobsClient({ url, token: token || undefined, timeoutMs: 10_000 }).list();
    } catch (err) {
      // Nothing is stored before the check: a mistyped address must not cost the working connection its token.
      void vscode.window.showErrorMessage(`Cannot reach the cluster at ${url}: ${errorMessage(err)}`);
      return false;
    }
    if (token) await ctx.extension.secrets.store(TRAINER_TOKEN_SECRET, token);
    else await ctx.extension.secrets.delete(TRAINER_TOKEN_SECRET);
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
    const job = await jobFromArgOrPick(ctx, arg, 'Stop Job: running or pending job', isActiveJob);
    if (!job) return false;
    try {
      const stopped = await job.client.stop(job.id);
      void vscode.window.showInformationMessage(stopped ? `TBRL: stopping ${job.id}.` : `TBRL: ${job.id} was not running.`);
      ctx.trainer.refresh();
      return stopped;
    } catch (err) {
      void vscode.window.showErrorMessage(`Stop ${job.id} failed: ${errorMessage(err)}`);
      return false;
    }
  },
};

/**
 * Logs open as read-only documents (`tbrl-job-log:/<id>.log`) holding the log as fetched when the
 * command ran: an untitled document would be editable and ask to be saved when closed.
 */
const LOG_SCHEME = 'tbrl-job-log';
const logs = new Map<string, string>();
const logChanged = new vscode.EventEmitter<vscode.Uri>();
let logProviderRegistered = false;

function ensureLogProvider(ctx: CommandContext): void {
  if (logProviderRegistered) return;
  logProviderRegistered = true;
  ctx.extension.subscriptions.push(logChanged, vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, { onDidChange: logChanged.event, provideTextDocumentContent: (uri) => logs.get(uri.toString()) ?? '' }));
}

export const openJobLogs: CommandDef = {
  id: 'tbrl.openJobLogs',
  async run(ctx, arg) {
    const job = await jobFromArgOrPick(ctx, arg, 'Open Job Logs: job');
    if (!job) return undefined;
    let text: string;
    try {
      text = await job.client.logs(job.id);
    } catch (err) {
      void vscode.window.showErrorMessage(`Logs of ${job.id}: ${errorMessage(err)}`);
      return undefined;
    }
    ensureLogProvider(ctx);
    const uri = vscode.Uri.from({ scheme: LOG_SCHEME, path: `/${job.id}.log` });
    logs.set(uri.toString(), text);
    // VS Code keeps an open virtual document: tell it the log moved on since it was last opened.
    logChanged.fire(uri);
    const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), 'log');
    return vscode.window.showTextDocument(doc, { preview: true });
  },
};
