import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import type { PendingTurnInfo, TurnChoice } from '../../core/debug/turn';
import { decideRequest, decidedMessage, normalizeChoice } from './decisions';
import { DecideRequest, PendingTurnRequest, sendCustomRequest } from './protocol';
import type { DebugTracker } from './tracker';

/** The turn a live tbrl session waits before, or undefined when it waits before none. */
export async function pendingTurnOf(session: vscode.DebugSession): Promise<PendingTurnInfo | undefined> {
  const body = await sendCustomRequest(session, PendingTurnRequest);
  return body?.pending ?? undefined;
}

export type DecideOutcome = { sent: true; message: string; labels?: number } | { sent: false; message: string };

/**
 * Sends a human decision on the turn `session` waits before, the one path for the Decide Turn
 * quick pick and the step inspector. `step` is the turn the user looked at: if the run now waits
 * before another one, nothing is sent (a click on a stale card must not decide the next turn).
 * An edit without text asks for it, starting from the proposed turn. Never throws: the adapter's
 * refusal comes back as the message.
 */
export async function decideTurn(tracker: DebugTracker, session: vscode.DebugSession, choice: TurnChoice, step?: number): Promise<DecideOutcome> {
  let turn: PendingTurnInfo | undefined;
  try {
    turn = await pendingTurnOf(session);
  } catch (err) {
    return { sent: false, message: `The debug session did not say which turn is waiting: ${errorMessage(err)}` };
  }
  if (!turn) return { sent: false, message: 'No turn is waiting: decisions apply when a live run is stopped before an action.' };
  if (step !== undefined && turn.step !== step) return { sent: false, message: `Step ${step} is no longer the waiting turn (the run now waits before step ${turn.step}); look at that one, then decide.` };
  const c = normalizeChoice(choice, turn);
  let text: string | undefined;
  if (c.action === 'edit' && c.text === undefined) {
    text = await vscode.window.showInputBox({ title: `Edit step ${turn.step}`, prompt: 'Edited turn (the agent\'s action markup)', value: turn.text, ignoreFocusOut: true });
    if (!text?.trim()) return { sent: false, message: `Step ${turn.step}: edit cancelled, nothing was sent.` };
  }
  let labels: number | undefined;
  try {
    const body = await sendCustomRequest(session, DecideRequest, decideRequest(c, text));
    labels = typeof body?.labels === 'number' ? body.labels : undefined;
  } catch (err) {
    return { sent: false, message: errorMessage(err) };
  }
  const message = decidedMessage(turn, c, labels);
  tracker.noteDecision(session, turn.step, message);
  return { sent: true, message, labels };
}
