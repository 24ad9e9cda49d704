import { notification, request } from '../shared/ipc';
import type { StepView } from './model';

export type { StepView, CandidateView, RewardRow, MatrixView } from './model';

export interface InspectorPayload {
  trajectory: string;
  view: StepView;
}

/** Webview → extension: the step to show (asked on load and after the panel is shown again). */
export const GetStep = request<void, InspectorPayload | { empty: string }>('stepInspector/getStep');
/** Webview → extension: a point of the Φ curve was clicked; select that step in the debug session. */
export const SelectStep = request<{ step: number }, { selected: boolean; reason?: string }>('stepInspector/selectStep');
/** Extension → webview: the debugger stopped at another step (or another run became active). */
export const StepShown = notification<InspectorPayload>('stepInspector/stepShown');

/** What the webview keeps across hide/show with getState/setState. */
export interface StepInspectorState {
  /** Candidate cards show the full text instead of the first lines. */
  expanded: boolean;
}
