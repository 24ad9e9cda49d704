import * as vscode from 'vscode';

/**
 * Which debug session shows which trajectory and where it is stopped, from the adapter's custom
 * events (tbrl/loaded, tbrl/stopped), and the human decisions taken on its waiting turns. The trace
 * graph and the step inspector use it to follow and drive the debugger.
 */
export class DebugTracker implements vscode.Disposable {
  private readonly trajectories = new Map<string, string>();
  private readonly steps = new Map<string, number>();
  private readonly emitter = new vscode.EventEmitter<{ session: vscode.DebugSession; trajectory?: string; step: number; pending: boolean }>();
  readonly onStopped = this.emitter.event;
  private readonly decided = new vscode.EventEmitter<{ session: vscode.DebugSession; step: number; message: string }>();
  /** A human decided a waiting turn (quick pick or inspector), so every view of it can stop offering the choice. */
  readonly onDecided = this.decided.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.disposables.push(
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
        if (e.session.type !== 'tbrl') return;
        if (e.event === 'tbrl/loaded' && typeof e.body?.trajectory === 'string') this.trajectories.set(e.session.id, e.body.trajectory);
        if (e.event === 'tbrl/stopped') {
          if (typeof e.body?.trajectory === 'string') this.trajectories.set(e.session.id, e.body.trajectory);
          this.steps.set(e.session.id, e.body.step);
          this.emitter.fire({ session: e.session, trajectory: this.trajectories.get(e.session.id) ?? e.session.configuration.trajectory, step: e.body.step, pending: e.body.pending === true });
        }
      }),
      vscode.debug.onDidTerminateDebugSession((s) => {
        this.trajectories.delete(s.id);
        this.steps.delete(s.id);
      }),
      this.emitter,
      this.decided,
    );
  }

  trajectoryOf(session: vscode.DebugSession): string | undefined {
    return this.trajectories.get(session.id) ?? (typeof session.configuration.trajectory === 'string' ? session.configuration.trajectory : undefined);
  }

  sessionFor(trajectory: string): vscode.DebugSession | undefined {
    const active = vscode.debug.activeDebugSession;
    if (active?.type === 'tbrl' && this.trajectoryOf(active) === trajectory) return active;
    for (const [id, t] of this.trajectories) if (t === trajectory && active?.id === id) return active;
    return undefined;
  }

  noteDecision(session: vscode.DebugSession, step: number, message: string): void {
    this.decided.fire({ session, step, message });
  }

  stepOf(trajectory: string): number | undefined {
    const s = this.sessionFor(trajectory);
    return s ? this.steps.get(s.id) : undefined;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
