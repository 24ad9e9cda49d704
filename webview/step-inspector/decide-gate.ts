/**
 * Whether the inspector's decision buttons may be clicked: one decision per waiting turn. A click
 * greys them until the adapter refuses (then the choice is open again); a step notification that
 * was already on its way when the user clicked re-renders that same turn, and must not offer it
 * again. Pure state, no DOM: main.ts asks it after each event and sets the buttons.
 */
export interface TurnRef {
  runId: string;
  step: number;
  /** Set when the view is a turn waiting to run (its cards can decide it); a StepView is a TurnRef. */
  pending?: unknown;
}

export class DecideGate {
  /** The waiting turn a decision was sent (or is being sent) for. */
  private decided?: { runId: string; step: number };

  /** A view is rendered: may its buttons be clicked? Any other view than the decided turn means the run moved on, or back. */
  rendered(v: TurnRef): boolean {
    if (v.pending && sameTurn(this.decided, v)) return false;
    this.decided = undefined;
    return !!v.pending;
  }

  /** The user chose on `v`: no second choice on it while this one is on its way. */
  sending(v: TurnRef): void {
    this.decided = { runId: v.runId, step: v.step };
  }

  /** Nothing was sent for `v`: may the buttons of `shown` (the view on screen now) be clicked again? */
  refused(v: TurnRef, shown: TurnRef | undefined): boolean {
    if (sameTurn(this.decided, v)) this.decided = undefined;
    return !!shown?.pending && sameTurn(shown, v);
  }

  /** Decided elsewhere (the Decide Turn quick pick): should the buttons of `shown` go grey? */
  decidedElsewhere(step: number, shown: TurnRef | undefined): boolean {
    if (!shown?.pending || shown.step !== step) return false;
    this.decided = { runId: shown.runId, step };
    return true;
  }
}

function sameTurn(a: { runId: string; step: number } | undefined, b: { runId: string; step: number }): boolean {
  return a?.runId === b.runId && a.step === b.step;
}
