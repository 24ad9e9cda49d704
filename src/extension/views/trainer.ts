import * as vscode from 'vscode';
import { RayJobsClient, type JobDetails } from '../../core/trainer/jobs';
import { errorMessage } from '../../core/errors';

export const TRAINER_TOKEN_SECRET = 'tbrl.trainer.token';

type TrainerItem = { kind: 'job'; job: JobDetails } | { kind: 'message'; text: string; command?: string };

/** Jobs on the connected Ray cluster (the Jobs REST API of its dashboard), newest first. */
export class TrainerProvider implements vscode.TreeDataProvider<TrainerItem> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly url: () => string, private readonly secrets: vscode.SecretStorage) {}

  refresh(): void {
    this.changed.fire();
  }

  async client(): Promise<RayJobsClient | undefined> {
    const url = this.url();
    if (!url) return undefined;
    return new RayJobsClient({ url, token: (await this.secrets.get(TRAINER_TOKEN_SECRET)) ?? undefined, timeoutMs: 10_000 });
  }

  async getChildren(): Promise<TrainerItem[]> {
    const client = await this.client();
    if (!client) return [{ kind: 'message', text: 'Not connected: run "TBRL: Connect to Cluster"', command: 'tbrl.connectCluster' }];
    try {
      const jobs = await client.list();
      if (jobs.length === 0) return [{ kind: 'message', text: `No jobs on ${this.url()}` }];
      return jobs.sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0)).map((job) => ({ kind: 'job', job }));
    } catch (err) {
      return [{ kind: 'message', text: `${this.url()}: ${errorMessage(err).split('\n')[0]}`, command: 'tbrl.connectCluster' }];
    }
  }

  getTreeItem(item: TrainerItem): vscode.TreeItem {
    if (item.kind === 'message') {
      const t = new vscode.TreeItem(item.text);
      if (item.command) t.command = { command: item.command, title: item.text };
      return t;
    }
    const j = item.job;
    const t = new vscode.TreeItem(j.submission_id);
    t.description = `${j.status}${j.start_time ? ` · ${new Date(j.start_time).toISOString().slice(0, 16).replace('T', ' ')}` : ''}`;
    t.tooltip = `${j.entrypoint}\n${j.message ?? ''}`;
    t.contextValue = j.status === 'RUNNING' || j.status === 'PENDING' ? 'tbrlJobActive' : 'tbrlJob';
    t.iconPath = new vscode.ThemeIcon(j.status === 'SUCCEEDED' ? 'pass' : j.status === 'FAILED' ? 'error' : j.status === 'STOPPED' ? 'debug-stop' : 'sync');
    t.command = { command: 'tbrl.openJobLogs', title: 'Open logs', arguments: [j.submission_id] };
    return t;
  }
}
