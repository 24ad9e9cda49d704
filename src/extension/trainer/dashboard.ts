import * as vscode from 'vscode';
import { Endpoint } from '../../../webview/shared/ipc';
import { ChartsChanged, GetDashboard, JobChanged, LogAppended, type DashboardPayload, type JobView } from '../../../webview/trainer-dashboard/protocol';
import { chartViews } from '../../../webview/trainer-dashboard/series';
import { errorMessage } from '../../core/errors';
import { MetricsParser } from '../../core/trainer/metrics';
import { TERMINAL_STATUSES, type JobDetails, type RayJobsClient } from '../../core/trainer/jobs';
import { webviewHtml, webviewResourceRoots } from '../webview/html';
import type { CommandContext } from '../commands/context';

/** The panel keeps this much of the log; the whole log is one "Open Job Logs" away. */
const LOG_KEEP = 256 * 1024;
const POLL_MS = 2000;
// Posting every websocket frame would flood the webview during a chatty rollout phase.
const FLUSH_MS = 250;

export function jobView(j: JobDetails): JobView {
  return {
    submissionId: j.submission_id,
    status: j.status,
    ...(j.message ? { message: j.message } : {}),
    entrypoint: j.entrypoint,
    ...(j.start_time ? { startTime: j.start_time } : {}),
    ...(j.end_time ? { endTime: j.end_time } : {}),
    ...(j.metadata ? { metadata: j.metadata } : {}),
  };
}

/**
 * One dashboard per job: polls the job's status, follows its log through the core tail (which
 * reconnects on its own) and turns the log into metric series. The webview asks for the whole state
 * on load, so a panel VS Code discarded while hidden comes back complete.
 */
export class TrainerDashboard {
  static readonly panels = new Map<string, TrainerDashboard>();
  private readonly ipc: Endpoint;
  private readonly abort = new AbortController();
  private readonly parser = new MetricsParser();
  private job: JobView;
  private log = '';
  private pendingLog = '';
  private flushTimer?: ReturnType<typeof setTimeout>;
  private poller?: ReturnType<typeof setInterval>;
  private tailState = 'connecting';
  private disposed = false;

  static show(ctx: CommandContext, submissionId: string): TrainerDashboard | undefined {
    const open = TrainerDashboard.panels.get(submissionId);
    if (open) {
      open.panel.reveal();
      return open;
    }
    const panel = vscode.window.createWebviewPanel('tbrl.trainerDashboard', `Training: ${submissionId}`, vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: webviewResourceRoots(ctx.extension.extensionUri),
    });
    const d = new TrainerDashboard(ctx, panel, submissionId);
    TrainerDashboard.panels.set(submissionId, d);
    return d;
  }

  private constructor(private readonly ctx: CommandContext, readonly panel: vscode.WebviewPanel, readonly submissionId: string) {
    this.job = { submissionId, status: 'PENDING' };
    this.ipc = new Endpoint((m) => void panel.webview.postMessage(m));
    panel.webview.onDidReceiveMessage((m) => void this.ipc.receive(m));
    this.ipc.onRequest(GetDashboard, () => this.payload());
    panel.onDidDispose(() => this.dispose());
    panel.webview.html = webviewHtml(panel.webview, ctx.extension.extensionUri, 'trainer-dashboard', 'Training');
    void this.start();
  }

  payload(): DashboardPayload {
    return { job: this.job, charts: chartViews(this.parser.canonical()), log: this.log, tailState: this.tailState };
  }

  private async start(): Promise<void> {
    const client = await this.ctx.trainer.client();
    if (!client) {
      this.setTail('not connected: run "TBRL: Connect to Cluster"');
      return;
    }
    this.poller = setInterval(() => void this.poll(client), POLL_MS);
    await this.poll(client);
    void this.follow(client);
  }

  private async poll(client: RayJobsClient): Promise<void> {
    try {
      const j = await client.status(this.submissionId);
      const changed = j.status !== this.job.status || (j.message ?? undefined) !== this.job.message;
      this.job = jobView(j);
      if (changed) {
        this.ipc.sendNotification(JobChanged, { job: this.job, tailState: this.tailState });
        this.ctx.trainer.refresh();
      }
      if (TERMINAL_STATUSES.has(j.status) && this.poller) {
        clearInterval(this.poller);
        this.poller = undefined;
      }
    } catch (err) {
      this.setTail(`status: ${errorMessage(err).split('\n')[0]}`);
    }
  }

  private async follow(client: RayJobsClient): Promise<void> {
    this.setTail('live');
    try {
      const end = await client.tail(this.submissionId, (text) => this.append(text), { signal: this.abort.signal, maxReconnects: 5 });
      this.flush();
      this.parser.end();
      this.job = jobView(end);
      this.setTail(TERMINAL_STATUSES.has(end.status) ? `ended (${end.status})` : 'stopped');
      this.ipc.sendNotification(ChartsChanged, { charts: chartViews(this.parser.canonical()) });
    } catch (err) {
      if (!this.disposed) this.setTail(`lost: ${errorMessage(err).split('\n')[0]}`);
    }
  }

  private append(text: string): void {
    if (this.disposed) return;
    this.parser.push(text);
    this.log = (this.log + text).slice(-LOG_KEEP);
    this.pendingLog += text;
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.disposed || !this.pendingLog) return;
    this.ipc.sendNotification(LogAppended, { text: this.pendingLog.slice(-LOG_KEEP) });
    this.pendingLog = '';
    this.ipc.sendNotification(ChartsChanged, { charts: chartViews(this.parser.canonical()) });
  }

  private setTail(state: string): void {
    this.tailState = state;
    if (!this.disposed) this.ipc.sendNotification(JobChanged, { job: this.job, tailState: state });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    TrainerDashboard.panels.delete(this.submissionId);
    this.abort.abort();
    if (this.poller) clearInterval(this.poller);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.ipc.dispose();
    this.panel.dispose();
  }
}
