import { notification, request } from '../shared/ipc';
import type { GraphView } from '../../src/core/depgpo/view';
import type { FoldBy } from './collapse';

export type { GraphView, GraphNode } from '../../src/core/depgpo/view';

export interface GraphPayload {
  graph: GraphView;
  /** The step the debugger is stopped at, if a session of this run is active. */
  currentStep?: number;
  trajectory: string;
  /** How far the run behind the graph has got; absent when the host does not know (tests, older hosts). */
  run?: RunInfo;
}

export interface RunInfo {
  /** A debug session is running this trajectory's agent now: the graph grows as steps are written. */
  live: boolean;
  steps: number;
  /** The trajectory has its footer (the run ended, whatever the outcome). */
  ended: boolean;
  /** The footer holds the verifier's trace, so E and the paths into it are known. */
  eKnown: boolean;
  /** Nothing to read yet (a live run before its sandbox is up, a fork being set up): why. */
  waiting?: string;
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
  /** Which runs of commands fold into a summary node. */
  foldBy?: FoldBy;
  /** Unset until the first non-empty graph, which starts folded when it is big (AUTO_FOLD_COMMANDS). */
  collapseAll?: boolean;
  /** Groups the user folded or unfolded against collapseAll. */
  foldExceptions?: string[];
}
