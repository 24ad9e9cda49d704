import * as vscode from 'vscode';
import type { DebugState } from '../../core/debug/runtime';
import { customEventBody, ForkedEvent, LoadedEvent, sendCustomRequest, StateRequest, StepEvent, StoppedEvent } from './protocol';

/** A session's trajectory grew, ended, or was replaced by another one (restart frame, step back that restores). */
export interface RunChange {
  session: vscode.DebugSession;
  trajectory: string;
  /** The trajectory the session showed before, when this change replaced it. */
  previous?: string;
  reason: 'step' | 'stopped' | 'loaded' | 'forked';
  live: boolean;
}

/**
 * Which debug session shows which trajectory and where it is stopped, from the adapter's custom
 * events (protocol.ts: tbrl/loaded, tbrl/stopped, tbrl/step, tbrl/forked). A live session names
 * its trajectory only at its stops (tbrl/stopped) and its end (tbrl/loaded), so on its steps the
 * tracker asks the adapter (tbrl/state). It also relays the human decisions taken on waiting
 * turns. The trace graph and the step inspector use it to follow and drive the debugger.
 */
export class DebugTracker implements vscode.Disposable {
  private readonly trajectories = new Map<string, string>();
  private readonly steps = new Map<string, number>();
  private readonly live = new Map<string, boolean>();
  private readonly emitter = new vscode.EventEmitter<{ session: vscode.DebugSession; trajectory?: string; step: number; pending: boolean }>();
  readonly onStopped = this.emitter.event;
  private readonly runEmitter = new vscode.EventEmitter<RunChange>();
  readonly onRunChanged = this.runEmitter.event;
  private readonly decided = new vscode.EventEmitter<{ session: vscode.DebugSession; step: number; message: string }>();
  /** A human decided a waiting turn (quick pick or inspector), so every view of it can stop offering the choice. */
  readonly onDecided = this.decided.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.disposables.push(
      vscode.debug.onDidReceiveDebugSessionCustomEvent((e) => {
        if (e.session.type !== 'tbrl') return;
        const loaded = customEventBody(e, LoadedEvent);
        if (typeof loaded?.trajectory === 'string') {
          this.trajectories.set(e.session.id, loaded.trajectory);
          this.live.set(e.session.id, false);
          this.runEmitter.fire({ session: e.session, trajectory: loaded.trajectory, reason: 'loaded', live: false });
        }
        const forked = customEventBody(e, ForkedEvent);
        if (typeof forked?.trajectory === 'string') {
          const previous = this.trajectories.get(e.session.id) ?? (typeof forked.from === 'string' ? forked.from : undefined);
          this.trajectories.set(e.session.id, forked.trajectory);
          this.live.set(e.session.id, true);
          this.runEmitter.fire({ session: e.session, trajectory: forked.trajectory, previous, reason: 'forked', live: true });
        }
        if (e.event === StepEvent.method) void this.refresh(e.session, 'step');
        const stopped = customEventBody(e, StoppedEvent);
        if (stopped) {
          const previous = this.trajectories.get(e.session.id);
          const named = typeof stopped.trajectory === 'string' ? stopped.trajectory : undefined;
          if (named) this.trajectories.set(e.session.id, named);
          this.steps.set(e.session.id, stopped.step);
          this.emitter.fire({ session: e.session, trajectory: this.trajectories.get(e.session.id) ?? e.session.configuration.trajectory, step: stopped.step, pending: stopped.pending === true });
          // A step back that restores starts the task again without tbrl/forked: its first stop names the new file.
          if (named && previous && previous !== named) this.runEmitter.fire({ session: e.session, trajectory: named, previous, reason: 'stopped', live: this.live.get(e.session.id) !== false });
          // Only a session that runs a task can move to another trajectory; a replay keeps its own.
          if (e.session.configuration.task !== undefined) void this.refresh(e.session, 'stopped');
        }
      }),
      vscode.debug.onDidTerminateDebugSession((s) => {
        this.trajectories.delete(s.id);
        this.steps.delete(s.id);
        this.live.delete(s.id);
      }),
      this.emitter,
      this.runEmitter,
      this.decided,
    );
  }

  /**
   * Asks the adapter which trajectory the session writes now. A step back that restores starts the
   * task again without a tbrl/forked event, so a changed path is reported as a replacement too.
   */
  private async refresh(session: vscode.DebugSession, reason: RunChange['reason']): Promise<string | undefined> {
    let state: Partial<DebugState> | undefined;
    try {
      state = await sendCustomRequest(session, StateRequest);
    } catch {
      return this.trajectories.get(session.id); // the session ended meanwhile
    }
    if (typeof state?.trajectory !== 'string') return undefined;
    const previous = this.trajectories.get(session.id);
    const live = state.live === true;
    // A reply that overtook tbrl/loaded must not mark the ended run live again.
    if (this.live.get(session.id) === false && previous === state.trajectory && live) return previous;
    this.trajectories.set(session.id, state.trajectory);
    this.live.set(session.id, live);
    this.runEmitter.fire({ session, trajectory: state.trajectory, ...(previous && previous !== state.trajectory ? { previous } : {}), reason, live });
    return state.trajectory;
  }

  trajectoryOf(session: vscode.DebugSession): string | undefined {
    return this.trajectories.get(session.id) ?? (typeof session.configuration.trajectory === 'string' ? session.configuration.trajectory : undefined);
  }

  /** The session's trajectory, asking a live session that has not named it yet. */
  async resolveTrajectory(session: vscode.DebugSession): Promise<string | undefined> {
    return this.trajectoryOf(session) ?? (session.type === 'tbrl' ? this.refresh(session, 'stopped') : undefined);
  }

  /** A debug session is running the agent that writes this trajectory. */
  isLive(trajectory: string): boolean {
    for (const [id, t] of this.trajectories) if (t === trajectory && this.live.get(id)) return true;
    return false;
  }

  noteDecision(session: vscode.DebugSession, step: number, message: string): void {
    this.decided.fire({ session, step, message });
  }

  sessionFor(trajectory: string): vscode.DebugSession | undefined {
    const active = vscode.debug.activeDebugSession;
    if (active?.type === 'tbrl' && this.trajectoryOf(active) === trajectory) return active;
    for (const [id, t] of this.trajectories) if (t === trajectory && active?.id === id) return active;
    return undefined;
  }

  stepOf(trajectory: string): number | undefined {
    const s = this.sessionFor(trajectory);
    return s ? this.steps.get(s.id) : undefined;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
