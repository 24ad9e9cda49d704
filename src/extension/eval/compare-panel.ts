import * as vscode from 'vscode';
import { basename } from 'node:path';
import { Endpoint } from '../../../webview/shared/ipc';
import { ComparisonChanged, GetComparison, OpenTrial, type MatrixView } from '../../../webview/eval-compare/protocol';
import { compareJobs, loadJob, type LoadedJob } from '../../core/eval/compare';
import { buildMatrix } from '../../../webview/eval-compare/matrix';
import { trialTrajectory } from '../views/jobs';
import { webviewHtml, webviewResourceRoots } from '../webview/html';
import type { CommandContext } from '../commands/context';

/**
 * The comparison of eval jobs: a tasks × jobs matrix built by the core's compareJobs (the same
 * rates, bootstrap and flipped tasks as `tbrl eval compare`). One panel; comparing other jobs
 * replaces its content. It is rebuilt when a compared job changes on disk.
 */
export class EvalComparePanel {
  static current: EvalComparePanel | undefined;
  private readonly ipc: Endpoint;
  private loaded: LoadedJob[] = [];
  private view: MatrixView = { jobs: [], rows: [], differences: [] };
  private readonly listener: vscode.Disposable;

  static show(ctx: CommandContext, dirs: string[]): EvalComparePanel {
    if (EvalComparePanel.current) {
      EvalComparePanel.current.setJobs(dirs);
      EvalComparePanel.current.panel.reveal();
      return EvalComparePanel.current;
    }
    const panel = vscode.window.createWebviewPanel('tbrl.evalCompare', 'Eval Comparison', vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: webviewResourceRoots(ctx.extension.extensionUri),
    });
    return (EvalComparePanel.current = new EvalComparePanel(ctx, panel, dirs));
  }

  private constructor(private readonly ctx: CommandContext, readonly panel: vscode.WebviewPanel, private dirs: string[]) {
    this.ipc = new Endpoint((m) => void panel.webview.postMessage(m));
    panel.webview.onDidReceiveMessage((m) => void this.ipc.receive(m));
    this.ipc.onRequest(GetComparison, () => this.view);
    this.ipc.onRequest(OpenTrial, (p) => this.openTrial(p.job, p.task, p.pick));
    this.listener = ctx.evalJobs.onDidChangeTreeData(() => this.reload(true));
    panel.onDidDispose(() => this.dispose());
    this.reload(false);
    panel.webview.html = webviewHtml(panel.webview, ctx.extension.extensionUri, 'eval-compare', 'Eval Comparison');
  }

  setJobs(dirs: string[]): void {
    this.dirs = dirs;
    this.reload(true);
  }

  private reload(notify: boolean): void {
    try {
      this.loaded = this.dirs.map((d) => loadJob(d));
      this.view = buildMatrix(compareJobs(this.loaded));
    } catch (err) {
      // A job being rewritten mid-read: keep the last good matrix, the next change redraws it.
      this.ctx.output.warn(`[eval compare] ${(err as Error).message}`);
    }
    this.panel.title = `Eval: ${this.dirs.map((d) => basename(d)).join(' vs ')}`;
    if (notify) this.ipc.sendNotification(ComparisonChanged, { view: this.view });
  }

  private async openTrial(job: number, task: string, pick: boolean): Promise<{ opened: string | null; reason?: string }> {
    const loaded = this.loaded[job];
    const row = this.view.rows.find((r) => r.task === task);
    const names = row?.cells[job]?.trials ?? [];
    if (!loaded || !names.length) return { opened: null, reason: `no trial of ${task} in that job yet` };
    let name: string | undefined = names[0];
    if (pick && names.length > 1) {
      const choice = await vscode.window.showQuickPick(names.map((n) => {
        const r = loaded.trials.get(n);
        return { label: n, description: r ? `${r.outcome.class}${r.reward !== undefined ? ` · reward ${r.reward.toFixed(3)}` : ''}` : '' };
      }), { title: `${task} in ${loaded.label}: trial` });
      name = choice?.label;
    }
    const record = name ? loaded.trials.get(name) : undefined;
    if (!record) return { opened: null, reason: 'no trial picked' };
    const trajectory = trialTrajectory(loaded.dir, record);
    await vscode.commands.executeCommand('tbrl.openTrajectory', vscode.Uri.file(trajectory));
    return { opened: record.trial };
  }

  dispose(): void {
    if (EvalComparePanel.current === this) EvalComparePanel.current = undefined;
    this.listener.dispose();
    this.ipc.dispose();
    this.panel.dispose();
  }
}
