import { notification, request, type NotificationType, type RequestType } from '../../../webview/shared/ipc';
import type { DebugState } from '../../core/debug/runtime';
import type { HumanDecision, PendingTurnInfo } from '../../core/debug/turn';

/**
 * The `tbrl` debug adapter's custom DAP requests and events, declared once with the same typed
 * request/notification objects as the webview messages (webview/shared/ipc.ts). The adapter
 * (session.ts) answers and sends them; the extension side (tracker, Decide Turn, the panels) sends
 * and reads them through `sendCustomRequest` and `customEventBody`, so a renamed request or a
 * changed body is a type error on both sides, not a silent mismatch of strings.
 */

/** Stop at frame `step` (the trace graph, the step inspector's Φ curve, Open Changed File). */
export const SelectStepRequest = request<{ step: number }, void>('tbrl/selectStep');
/** Where the session stands and which trajectory it shows now. */
export const StateRequest = request<void, DebugState>('tbrl/state');
/** The live turn waiting to run, with its candidates. */
export const PendingTurnRequest = request<void, { pending: PendingTurnInfo | null }>('tbrl/pendingTurn');
/** A human decision on the waiting turn; the reply counts the preference labels written (absent when writing failed). */
export const DecideRequest = request<HumanDecision, { labels?: number }>('tbrl/decide');

/** A trajectory is loaded: a replay at launch, or a live run's file once the run ended. */
export const LoadedEvent = notification<{ trajectory: string; runId?: string; steps: number }>('tbrl/loaded');
/** Every stop, with the trajectory the frames come from (a live run names its file here first). */
export const StoppedEvent = notification<{ step: number; pending: boolean; trajectory?: string }>('tbrl/stopped');
/** A live run wrote step `step`. */
export const StepEvent = notification<{ step: number }>('tbrl/step');
/** Restart frame or a restoring step back replaced the run by a fork of `from` at `step`. */
export const ForkedEvent = notification<{ from: string; step: number; trajectory?: string }>('tbrl/forked');

/** A debug session as the extension sees it (vscode.DebugSession); structural, so this file needs no vscode. */
export interface CustomRequester {
  customRequest(command: string, args?: unknown): PromiseLike<unknown>;
}

/** Sends a custom request to the adapter and types its reply. */
export async function sendCustomRequest<P, R>(session: CustomRequester, type: RequestType<P, R>, ...params: [P] extends [void] ? [] : [P]): Promise<R> {
  return (await session.customRequest(type.method, params[0])) as R;
}

/** The body of a custom event when it is `type`, else undefined. */
export function customEventBody<P>(event: { event: string; body?: unknown }, type: NotificationType<P>): P | undefined {
  return event.event === type.method ? (event.body as P) : undefined;
}
