import * as vscode from 'vscode';
import { stat } from 'node:fs/promises';
import { Endpoint } from '../../../webview/shared/ipc';
import { GetGraph, GraphChanged, SelectStep, StepChanged, type GraphPayload } from '../../../webview/trace-graph/protocol';
import { graphWithRun } from './data';
import { errorMessage } from '../../core/errors';
import { webviewHtml, webviewOptions } from '../webview/html';
import { openSidePanel } from '../webview/side-panel';
import type { DebugTracker, RunChange } from '../debug/tracker';
import { SelectStepRequest, sendCustomRequest } from '../debug/protocol';

/** A live run can write many steps a second: redraw at most this often… */
const REDRAW_QUIET_MS = 250;
/** …but never wait longer than this while steps keep coming. */
const REDRAW_MAX_WAIT_MS = 1000;

/**
 * One trace-graph panel at a time; showing another run replaces its graph. The webview asks for
 * the graph itself (GetGraph) when it loads, so after VS Code discards a hidden webview the panel
 * comes back with its own state (getState) and the current graph. While a debug session runs the
 * agent of the shown trajectory, the panel redraws as steps are written (debounced) and follows
 * the session onto the trajectory of a fork.
 */
export class TraceGraphPanel {
  static current?: TraceGraphPanel;
  private readonly ipc: Endpoint;
  private readonly disposables: vscode.Disposable[] = [];
  private last?: GraphPayload;
  /** size:mtime of the file behind `last`: a stop that wrote nothing needs no redraw. */
  private lastStamp?: string;
  private timer?: ReturnType<typeof setTimeout>;
  private firstRequest?: number;
  private refreshing?: Promise<void>;
  private again = false;

  static async show(context: vscode.ExtensionContext, tracker: DebugTracker, trajectory: string): Promise<TraceGraphPanel> {
    if (!TraceGraphPanel.current) {
      // In a group of its own, locked, with focus back in the editor: the debugger opens each step's turn in the active group, which must not be the graph's.
      const panel = await openSidePanel('tbrl.traceGraph', 'Trace graph', webviewOptions(context.extensionUri));
      // Shown twice at once: the first panel stays and shows what this call asked for.
      if (TraceGraphPanel.current) panel.dispose();
      else return (TraceGraphPanel.current = new TraceGraphPanel(context, tracker, panel, trajectory));
    }
    void TraceGraphPanel.current.setTrajectory(trajectory);
    TraceGraphPanel.current.panel.reveal(vscode.ViewColumn.Beside, true);
    return TraceGraphPanel.current;
  }

  private constructor(context: vscode.ExtensionContext, private readonly tracker: DebugTracker, readonly panel: vscode.WebviewPanel, private trajectory: string) {
    this.ipc = new Endpoint((m) => void panel.webview.postMessage(m));
    this.disposables.push(panel.webview.onDidReceiveMessage((m) => void this.ipc.receive(m)));
    this.ipc.onRequest(GetGraph, () => this.payload());
    this.ipc.onRequest(SelectStep, async ({ step }) => {
      const session = this.tracker.sessionFor(this.trajectory);
      if (!session) return { selected: false, reason: 'No debug session of this run is active: start one with "TBRL: Open Trajectory" to select steps from the graph.' };
      // The debugger opens the step's turn in the active editor group; make that the first group, not the graph's.
      await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
      await sendCustomRequest(session, SelectStepRequest, { step });
      return { selected: true };
    });
    this.disposables.push(tracker.onStopped(({ trajectory, step }) => {
      if (trajectory !== this.trajectory) return;
      this.ipc.sendNotification(StepChanged, { step });
      // After a click in the graph its group is the active one, and the turn of this stop would open over the graph.
      if (this.panel.active && this.panel.viewColumn !== vscode.ViewColumn.One) void vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
    }));
    this.disposables.push(tracker.onRunChanged((e) => this.onRunChanged(e)));
    panel.onDidDispose(() => this.dispose(), null, this.disposables);
    panel.webview.html = webviewHtml(panel.webview, context.extensionUri, 'trace-graph', 'Trace graph');
    this.setTitle();
  }

  private onRunChanged(e: RunChange): void {
    if (e.previous === this.trajectory && e.trajectory !== this.trajectory) {
      // The session moved to a fork of the run on screen: the graph goes with it.
      this.trajectory = e.trajectory;
      this.setTitle();
      this.lastStamp = undefined;
      return this.scheduleRefresh(true);
    }
    if (e.trajectory !== this.trajectory) return;
    // The run ended: its final graph (with E) is drawn at once; steps are batched.
    this.scheduleRefresh(e.reason === 'loaded' || e.reason === 'forked');
  }

  private setTitle(): void {
    this.panel.title = `Trace graph: ${vscode.workspace.asRelativePath(this.trajectory)}`;
  }

  private scheduleRefresh(now: boolean): void {
    const at = Date.now();
    this.firstRequest ??= at;
    if (this.timer) clearTimeout(this.timer);
    const wait = now ? 0 : Math.max(0, Math.min(REDRAW_QUIET_MS, this.firstRequest + REDRAW_MAX_WAIT_MS - at));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.firstRequest = undefined;
      void this.refresh();
    }, wait);
  }

  /** Sends the graph if the file changed since the last one; one read at a time, the latest request wins. */
  private async refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        const stamp = await stat(this.trajectory).then((s) => `${this.trajectory}:${s.size}:${s.mtimeMs}`, () => undefined);
        if (stamp !== undefined && stamp === this.lastStamp) return;
        this.ipc.sendNotification(GraphChanged, await this.payload());
      } catch (err) {
        void vscode.window.showErrorMessage(`Trace graph: ${errorMessage(err)}`);
      } finally {
        this.refreshing = undefined;
        if (this.again) {
          this.again = false;
          void this.refresh();
        }
      }
    })();
    return this.refreshing;
  }

  private async payload(): Promise<GraphPayload> {
    const trajectory = this.trajectory;
    const stamp = await stat(trajectory).then((s) => `${trajectory}:${s.size}:${s.mtimeMs}`, () => undefined);
    const { graph, run } = await graphWithRun(trajectory, this.tracker.isLive(trajectory));
    const currentStep = this.tracker.stepOf(trajectory);
    // A fork being set up has no file yet: keep the graph it was forked from on screen, and say why.
    if (run.waiting && this.last && this.last.graph.nodes.length > 0) {
      return { ...this.last, trajectory, ...(currentStep !== undefined ? { currentStep } : {}), run: { ...(this.last.run ?? run), waiting: run.waiting } };
    }
    this.last = { graph, trajectory, run, ...(currentStep !== undefined ? { currentStep } : {}) };
    this.lastStamp = run.waiting ? undefined : stamp;
    return this.last;
  }

  async setTrajectory(trajectory: string): Promise<void> {
    this.trajectory = trajectory;
    this.last = undefined;
    this.lastStamp = undefined;
    this.setTitle();
    this.ipc.sendNotification(GraphChanged, await this.payload());
  }

  dispose(): void {
    TraceGraphPanel.current = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.ipc.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
