import { notification, request } from '../shared/ipc';
import type { StepView } from './model';
import type { TurnChoice } from '../../src/core/debug/turn';

export type { StepView, CandidateView, RewardRow, MatrixView } from './model';
export type { TurnChoice } from '../../src/core/debug/turn';

export interface InspectorPayload {
  trajectory: string;
  view: StepView;
}

/** Webview → extension: the step to show (asked on load and after the panel is shown again). */
export const GetStep = request<void, InspectorPayload | { empty: string }>('stepInspector/getStep');
/** Webview → extension: a point of the Φ curve was clicked; select that step in the debug session. */
export const SelectStep = request<{ step: number }, { selected: boolean; reason?: string }>('stepInspector/selectStep');
/**
 * Webview → extension: decide the waiting turn `step` (accept the verifier's pick, run another
 * candidate, edit, stop), sent to the session's tbrl/decide like the Decide Turn quick pick. The
 * reply says what happened, or why nothing was sent (the adapter's error, a cancelled edit).
 */
export const Decide = request<{ step: number; choice: TurnChoice }, { sent: boolean; message: string }>('stepInspector/decide');
/** Extension → webview: a decision on waiting turn `step` was sent (from the inspector or the quick pick). */
export const Decided = notification<{ step: number; message: string }>('stepInspector/decided');
/** Extension → webview: the debugger stopped at another step (or another run became active). */
export const StepShown = notification<InspectorPayload>('stepInspector/stepShown');

/** What the webview keeps across hide/show with getState/setState. */
export interface StepInspectorState {
  /** Candidate cards show the full text instead of the first lines. */
  expanded: boolean;
}
