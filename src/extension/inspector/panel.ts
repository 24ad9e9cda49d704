import * as vscode from 'vscode';
import { Endpoint } from '../../../webview/shared/ipc';
import { Decide, Decided, GetStep, SelectStep, StepShown, type InspectorPayload } from '../../../webview/step-inspector/protocol';
import { buildPendingStepView, buildStepView } from '../../../webview/step-inspector/model';
import { readTrajectory } from '../../core/trajectory/reader';
import { errorMessage } from '../../core/errors';
import { webviewHtml, webviewOptions } from '../webview/html';
import { openSidePanel } from '../webview/side-panel';
import type { DebugTracker } from '../debug/tracker';
import { decideTurn, pendingTurnOf } from '../debug/decide-turn';
import type { PendingTurnInfo } from '../../core/debug/turn';
import { SelectStepRequest, sendCustomRequest } from '../debug/protocol';

/**
 * One step-inspector panel at a time. It follows whichever tbrl debug session stops (the step
 * the debugger shows is the step inspected); the webview asks for the step itself (GetStep) when
 * it loads, so after VS Code discards a hidden webview it comes back with the current step. When
 * that step is the turn a live run waits before, its cards decide it (Decide → tbrl/decide).
 */
export class StepInspectorPanel {
  static current?: StepInspectorPanel;
  private readonly ipc: Endpoint;
  private readonly disposables: vscode.Disposable[] = [];
  private step = 0;

  static async show(context: vscode.ExtensionContext, tracker: DebugTracker, trajectory: string, step?: number): Promise<StepInspectorPanel> {
    if (!StepInspectorPanel.current) {
      // In a group of its own, locked, with focus back in the editor: the debugger opens each step's turn in the active group, which must not be the inspector's.
      const panel = await openSidePanel('tbrl.stepInspector', 'Step inspector', webviewOptions(context.extensionUri));
      // Shown twice at once: the first panel stays and shows what this call asked for.
      if (StepInspectorPanel.current) panel.dispose();
      else {
        StepInspectorPanel.current = new StepInspectorPanel(tracker, panel, trajectory, step ?? tracker.stepOf(trajectory) ?? 0);
        panel.webview.html = webviewHtml(panel.webview, context.extensionUri, 'step-inspector', 'Step inspector');
        return StepInspectorPanel.current;
      }
    }
    void StepInspectorPanel.current.showStep(trajectory, step ?? tracker.stepOf(trajectory) ?? 0);
    StepInspectorPanel.current.panel.reveal(vscode.ViewColumn.Beside, true);
    return StepInspectorPanel.current;
  }

  private constructor(private readonly tracker: DebugTracker, readonly panel: vscode.WebviewPanel, private trajectory: string, step: number) {
    this.step = step;
    this.ipc = new Endpoint((m) => void panel.webview.postMessage(m));
    this.disposables.push(panel.webview.onDidReceiveMessage((m) => void this.ipc.receive(m)));
    this.ipc.onRequest(GetStep, async () => {
      try {
        return await this.payload();
      } catch (err) {
        return { empty: errorMessage(err) };
      }
    });
    this.ipc.onRequest(SelectStep, async ({ step: target }) => {
      const session = this.tracker.sessionFor(this.trajectory);
      if (!session) return { selected: false, reason: 'No debug session of this run is active: start one with "TBRL: Open Trajectory" to select steps from the inspector.' };
      await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
      await sendCustomRequest(session, SelectStepRequest, { step: target });
      return { selected: true };
    });
    this.ipc.onRequest(Decide, async ({ step: waiting, choice }) => {
      const session = this.tracker.sessionFor(this.trajectory);
      if (!session) return { sent: false, message: 'The debug session of this run is not the active one (or has ended), so no turn of it can be decided here.' };
      // The click made the inspector's group active, and the next stop opens its turn in the active group: not over the inspector.
      await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
      return decideTurn(this.tracker, session, choice, waiting);
    });
    // Decided through the quick pick too: the cards must stop offering a choice that was made.
    this.disposables.push(tracker.onDecided(({ session, step: decided, message }) => {
      if (this.tracker.trajectoryOf(session) === this.trajectory) this.ipc.sendNotification(Decided, { step: decided, message });
    }));
    // Any tbrl session that stops is followed: the inspector is about "the step I am looking at".
    this.disposables.push(tracker.onStopped(({ trajectory, step: stopped }) => {
      if (trajectory) void this.showStep(trajectory, stopped);
    }));
    this.disposables.push(vscode.debug.onDidChangeActiveDebugSession((session) => {
      const trajectory = session?.type === 'tbrl' ? this.tracker.trajectoryOf(session) : undefined;
      const at = trajectory === undefined ? undefined : this.tracker.stepOf(trajectory);
      if (trajectory && at !== undefined) void this.showStep(trajectory, at);
    }));
    panel.onDidDispose(() => this.dispose(), null, this.disposables);
    this.setTitle();
  }

  private setTitle(): void {
    this.panel.title = `Step ${this.step}: ${vscode.workspace.asRelativePath(this.trajectory)}`;
  }

  private async payload(): Promise<InspectorPayload> {
    // Read each time: a live run's trajectory grows by a step at every stop.
    const t = await readTrajectory(this.trajectory);
    const waiting = await this.waitingTurn();
    const view = waiting ? buildPendingStepView(t.header.runId, t.steps, t.footer, waiting) : buildStepView(t.header.runId, t.steps, t.footer, this.step);
    return { trajectory: this.trajectory, view };
  }

  /** The inspected step when it is the turn a live session waits before (its candidates are only in the session). */
  private async waitingTurn(): Promise<PendingTurnInfo | undefined> {
    const session = this.tracker.sessionFor(this.trajectory);
    if (!session) return undefined;
    try {
      const turn = await pendingTurnOf(session);
      return turn?.step === this.step ? turn : undefined;
    } catch {
      // A session that cannot say (it is ending) has no turn to decide: show the recorded steps.
      return undefined;
    }
  }

  async showStep(trajectory: string, step: number): Promise<void> {
    this.trajectory = trajectory;
    this.step = step;
    this.setTitle();
    try {
      this.ipc.sendNotification(StepShown, await this.payload());
    } catch (err) {
      void vscode.window.showErrorMessage(`Step inspector: ${errorMessage(err)}`);
    }
  }

  dispose(): void {
    StepInspectorPanel.current = undefined;
    this.ipc.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
