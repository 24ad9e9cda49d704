import * as vscode from 'vscode';
import { RayJobsClient, type JobDetails } from '../../core/trainer/jobs';
import { errorMessage } from '../../core/errors';
import { isActiveJob, jobDescription, newestFirst } from '../trainer/jobs-view';

export const TRAINER_TOKEN_SECRET = 'tbrl.trainer.token';
/** How often the view asks Ray again while a job it shows is pending or running. */
export const ACTIVE_POLL_MS = 3000;

type TrainerItem = { kind: 'job'; job: JobDetails } | { kind: 'message'; text: string; command?: string };

/** Jobs on the connected Ray cluster (the Jobs REST API of its dashboard), newest first. */
export class TrainerProvider implements vscode.TreeDataProvider<TrainerItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private poll?: ReturnType<typeof setTimeout>;

  constructor(private readonly url: () => string, private readonly secrets: vscode.SecretStorage) {}

  refresh(): void {
    this.changed.fire();
  }

  dispose(): void {
    if (this.poll) clearTimeout(this.poll);
    this.changed.dispose();
  }

  /**
   * Ray changes a job's status on its own (a stop takes effect seconds later, a job ends): while one
   * is active the view refreshes itself, or it would show RUNNING until the user clicks refresh.
   * Armed from getChildren only, so a view nobody looks at stops asking.
   */
  private pollWhileActive(jobs: readonly JobDetails[]): void {
    if (this.poll || !jobs.some(isActiveJob)) return;
    this.poll = setTimeout(() => {
      this.poll = undefined;
      this.refresh();
    }, ACTIVE_POLL_MS);
    this.poll.unref?.();
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
      this.pollWhileActive(jobs);
      return newestFirst(jobs).map((job) => ({ kind: 'job', job }));
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
    t.description = jobDescription(j);
    t.tooltip = `${j.entrypoint}\n${j.message ?? ''}`;
    t.contextValue = isActiveJob(j) ? 'tbrlJobActive' : 'tbrlJob';
    t.iconPath = new vscode.ThemeIcon(j.status === 'SUCCEEDED' ? 'pass' : j.status === 'FAILED' ? 'error' : j.status === 'STOPPED' ? 'debug-stop' : 'sync');
    t.command = { command: 'tbrl.openJobLogs', title: 'Open logs', arguments: [j.submission_id] };
    return t;
  }
}
