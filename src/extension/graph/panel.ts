import * as vscode from 'vscode';
import { Endpoint } from '../../../webview/shared/ipc';
import { GetGraph, GraphChanged, SelectStep, StepChanged, type GraphPayload } from '../../../webview/trace-graph/protocol';
import { graphOfTrajectory } from './data';
import { webviewHtml, webviewResourceRoots } from '../webview/html';
import type { DebugTracker } from '../debug/tracker';

/**
 * One trace-graph panel at a time; showing another run replaces its graph. The webview asks for
 * the graph itself (GetGraph) when it loads, so after VS Code discards a hidden webview the panel
 * comes back with its own state (getState) and the current graph.
 */
export class TraceGraphPanel {
  static current?: TraceGraphPanel;
  private readonly ipc: Endpoint;
  private readonly disposables: vscode.Disposable[] = [];

  static show(context: vscode.ExtensionContext, tracker: DebugTracker, trajectory: string): TraceGraphPanel {
    if (TraceGraphPanel.current) {
      TraceGraphPanel.current.setTrajectory(trajectory);
      TraceGraphPanel.current.panel.reveal(vscode.ViewColumn.Beside);
      return TraceGraphPanel.current;
    }
    const panel = vscode.window.createWebviewPanel('tbrl.traceGraph', 'Trace graph', vscode.ViewColumn.Beside, {
      enableScripts: true,
      localResourceRoots: webviewResourceRoots(context.extensionUri),
    });
    TraceGraphPanel.current = new TraceGraphPanel(context, tracker, panel, trajectory);
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
      await session.customRequest('tbrl/selectStep', { step });
      return { selected: true };
    });
    this.disposables.push(tracker.onStopped(({ trajectory, step }) => {
      if (trajectory === this.trajectory) this.ipc.sendNotification(StepChanged, { step });
    }));
    panel.onDidDispose(() => this.dispose(), null, this.disposables);
    panel.webview.html = webviewHtml(panel.webview, context.extensionUri, 'trace-graph', 'Trace graph');
    panel.title = `Trace graph: ${vscode.workspace.asRelativePath(trajectory)}`;
  }

  private async payload(): Promise<GraphPayload> {
    const graph = await graphOfTrajectory(this.trajectory);
    return { graph, trajectory: this.trajectory, currentStep: this.tracker.stepOf(this.trajectory) };
  }

  async setTrajectory(trajectory: string): Promise<void> {
    this.trajectory = trajectory;
    this.panel.title = `Trace graph: ${vscode.workspace.asRelativePath(trajectory)}`;
    this.ipc.sendNotification(GraphChanged, await this.payload());
  }

  dispose(): void {
    TraceGraphPanel.current = undefined;
    this.ipc.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
