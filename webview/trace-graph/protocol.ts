import { notification, request } from '../shared/ipc';
import type { GraphView } from '../../src/core/depgpo/view';

export type { GraphView, GraphNode } from '../../src/core/depgpo/view';

export interface GraphPayload {
  graph: GraphView;
  /** The step the debugger is stopped at, if a session of this run is active. */
  currentStep?: number;
  trajectory: string;
}

/** Webview → extension: the graph to draw (asked on load and after the panel is shown again). */
export const GetGraph = request<void, GraphPayload>('traceGraph/getGraph');
/** Webview → extension: the user clicked a command; select its step in the debug session. */
export const SelectStep = request<{ step: number }, { selected: boolean; reason?: string }>('traceGraph/selectStep');
/** Extension → webview: the debugger stopped at another step. */
export const StepChanged = notification<{ step: number }>('traceGraph/stepChanged');
/** Extension → webview: a new graph (another run, or a live run that grew). */
export const GraphChanged = notification<GraphPayload>('traceGraph/graphChanged');

/** What the webview keeps across hide/show with getState/setState. */
export interface TraceGraphState {
  showFileEdges: boolean;
  showStdoutEdges: boolean;
  transform?: { x: number; y: number; k: number };
  selected?: string;
}
