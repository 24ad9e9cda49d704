import type { CandidateRecord, VerifierDecisionRecord } from '../trajectory/schema';

/**
 * The data of a live run's waiting turn and of a human decision on it: what the debug runtime
 * holds, what the adapter's `tbrl/pendingTurn` and `tbrl/decide` carry, and what the step
 * inspector webview shows. Types only (no values), so the webview can import them without
 * pulling host code into its bundle.
 */

/** What `tbrl/pendingTurn` answers while a live run waits before a turn (the body is `{ pending: null }` otherwise). */
export interface PendingTurnInfo {
  step: number;
  /** The turn that would run: the policy's (the verifier's) pick. */
  text: string;
  candidates: CandidateRecord[];
  chosen: number;
  decision?: VerifierDecisionRecord;
}

/** A choice offered to the human: the Decide Turn quick pick's entries and the step inspector's buttons. */
export type TurnChoice = { action: 'accept' } | { action: 'pick'; candidate: number } | { action: 'edit'; text?: string } | { action: 'stop' };

/** The body of `tbrl/decide`: a choice as sent to the adapter; `stopAfter` pauses again before the next turn. */
export type HumanDecision =
  | { action: 'accept'; stopAfter?: boolean; candidate?: undefined; text?: undefined }
  | { action: 'pick'; candidate?: number; stopAfter?: boolean; text?: undefined }
  | { action: 'edit'; text?: string; stopAfter?: boolean; candidate?: undefined }
  | { action: 'stop'; stopAfter?: boolean; candidate?: undefined; text?: undefined };
