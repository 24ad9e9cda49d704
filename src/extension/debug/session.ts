import { ContinuedEvent, DebugSession, Handles, InitializedEvent, OutputEvent, Scope, Source, StackFrame, StoppedEvent, TerminatedEvent, Thread, Breakpoint, Event } from '@vscode/debugadapter';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { StepRecord } from '../../core/trajectory/schema';
import { stepObservation } from '../../core/trajectory/observation';
import { actionSummary } from '../../core/trajectory/replay';
import { TrajectoryRuntime, type RuntimeError, type RuntimeEvent } from '../../core/debug/runtime';
import type { HumanDecision } from '../../core/debug/turn';
import type { NotificationType } from '../../../webview/shared/ipc';
import { candidatesScope, filesScope, runScope, stateScope, stepScope, type VarNode } from './variables';
import type { LaunchArgs } from './launch-args';
import { removeRunCheckpoints, startLiveRun } from './live';
import { DecideRequest, ForkedEvent, LoadedEvent, PendingTurnRequest, SelectStepRequest, StateRequest, StepEvent, StoppedEvent as TbrlStoppedEvent } from './protocol';

const THREAD_ID = 1;

/**
 * The `tbrl` debug adapter: a translator between the Debug Adapter Protocol and the
 * TrajectoryRuntime (src/core/debug/runtime.ts), which holds the stepping state. Stack frames are
 * the steps of a run (newest on top), the current step's turn is a virtual source, and the
 * Variables view shows the step, its candidates, agent state, files written and the run's reward
 * and credit. Custom requests and events are the typed ones of protocol.ts.
 */
export class TbrlDebugSession extends DebugSession {
  private readonly runtime = new TrajectoryRuntime<LaunchArgs>((e) => this.onRuntimeEvent(e), { startLive: startLiveRun, removeCheckpoints: removeRunCheckpoints });
  private handles = new Handles<() => VarNode[]>();
  private configured!: Promise<void>;
  private markConfigured!: () => void;

  constructor() {
    super();
    this.setDebuggerLinesStartAt1(true);
    this.setDebuggerColumnsStartAt1(true);
    this.configured = new Promise((r) => (this.markConfigured = r));
  }

  private onRuntimeEvent(e: RuntimeEvent): void {
    switch (e.type) {
      case 'output':
        return this.sendEvent(new OutputEvent(e.text, e.category));
      case 'stopped': {
        this.handles.reset();
        const ev = new StoppedEvent(e.reason, THREAD_ID) as DebugProtocol.StoppedEvent;
        ev.body.description = e.description;
        ev.body.text = e.text;
        if (e.hitBreakpointIds) ev.body.hitBreakpointIds = e.hitBreakpointIds;
        this.sendEvent(ev);
        return this.notify(TbrlStoppedEvent, { step: e.step, pending: e.pending, trajectory: e.trajectory });
      }
      case 'continued':
        return this.sendEvent(new ContinuedEvent(THREAD_ID));
      case 'terminated':
        return this.sendEvent(new TerminatedEvent());
      case 'loaded':
        return this.notify(LoadedEvent, { trajectory: e.trajectory, runId: e.runId, steps: e.steps });
      case 'step':
        return this.notify(StepEvent, { step: e.step });
      case 'forked':
        return this.notify(ForkedEvent, { from: e.from, step: e.step, trajectory: e.trajectory });
    }
  }

  private notify<P>(type: NotificationType<P>, body: P): void {
    this.sendEvent(new Event(type.method, body));
  }

  protected override initializeRequest(response: DebugProtocol.InitializeResponse): void {
    response.body = {
      ...response.body,
      supportsConfigurationDoneRequest: true,
      supportsFunctionBreakpoints: true,
      supportsStepBack: true,
      supportsRestartFrame: true,
      supportsTerminateRequest: true,
      supportsEvaluateForHovers: false,
    };
    this.sendResponse(response);
    this.sendEvent(new InitializedEvent());
  }

  protected override configurationDoneRequest(response: DebugProtocol.ConfigurationDoneResponse): void {
    this.sendResponse(response);
    this.markConfigured();
  }

  protected override async launchRequest(response: DebugProtocol.LaunchResponse, args: LaunchArgs | undefined): Promise<void> {
    const error = await this.runtime.load(args ?? {});
    if (error) return this.fail(response, error);
    this.sendResponse(response);
    await this.configured;
    this.runtime.start();
  }

  protected override setFunctionBreakPointsRequest(response: DebugProtocol.SetFunctionBreakpointsResponse, args: DebugProtocol.SetFunctionBreakpointsArguments): void {
    const results = this.runtime.setBreakpoints(args.breakpoints.map((b) => b.name));
    const breakpoints = results.map((r) => {
      const bp = new Breakpoint(r.verified) as DebugProtocol.Breakpoint;
      if (r.verified) bp.id = r.id;
      else bp.message = r.message;
      return bp;
    });
    response.body = { breakpoints };
    this.sendResponse(response);
  }

  protected override threadsRequest(response: DebugProtocol.ThreadsResponse): void {
    const runId = this.runtime.runId;
    response.body = { threads: [new Thread(THREAD_ID, runId ? `agent ${runId}` : 'agent')] };
    this.sendResponse(response);
  }

  protected override stackTraceRequest(response: DebugProtocol.StackTraceResponse, args: DebugProtocol.StackTraceArguments): void {
    const current = this.runtime.currentStep;
    const start = args.startFrame ?? 0;
    const levels = args.levels || 1000;
    const frames: StackFrame[] = [];
    for (let i = current - start; i >= 0 && frames.length < levels; i--) frames.push(this.stackFrame(i));
    response.body = { stackFrames: frames, totalFrames: current + 1 };
    this.sendResponse(response);
  }

  private stackFrame(index: number): StackFrame {
    const src = new Source(`step-${index}.tbrl.yaml`, undefined, index + 1, 'tbrl-step');
    const f = this.runtime.frame(index);
    if (f?.kind === 'pending') {
      const kinds = f.turn.parsed.items.map((i) => (i.ok ? i.action.kind : 'parse_error'));
      return new StackFrame(index + 1, `#${index} ▶ ${kinds.join(', ') || '(no action)'} (not run yet)`, src, 1, 1);
    }
    const s = f!.step;
    const summary = s.actions.length ? actionSummary(s.actions[0]) + (s.actions.length > 1 ? ` +${s.actions.length - 1}` : '') : s.parseErrors.length ? 'parse error' : '(no action)';
    return new StackFrame(index + 1, `#${index} ${summary}`, src, 1, 1);
  }

  protected override sourceRequest(response: DebugProtocol.SourceResponse, args: DebugProtocol.SourceArguments): void {
    const ref = args.source?.sourceReference ?? args.sourceReference;
    const index = ref - 1;
    response.body = { content: this.sourceText(index), mimeType: 'text/yaml' };
    this.sendResponse(response);
  }

  /** The turn as the agent wrote it, its observation below as comments. */
  sourceText(index: number): string {
    const f = this.runtime.frame(index);
    if (f?.kind === 'pending') {
      const t = f.turn;
      const others = t.policyTurn.candidates.map((_c, i) => `# candidate ${i}${i === t.policyTurn.chosen ? ' (chosen)' : ''}${t.policyTurn.decision ? ` score ${t.policyTurn.decision.scores[i]?.toFixed(3)}` : ''}`);
      return `${t.text}\n\n# ── not run yet ──\n${others.join('\n')}\n`;
    }
    if (!f) return `# step ${index} does not exist\n`;
    const obs = stepObservation(f.step).split('\n').map((l) => `# ${l}`).join('\n');
    return `${f.step.chosenText}\n\n# ── observation ──\n${obs}\n`;
  }

  protected override scopesRequest(response: DebugProtocol.ScopesResponse, args: DebugProtocol.ScopesArguments): void {
    const index = args.frameId - 1;
    const scopes: Scope[] = [];
    const f = this.runtime.frame(index);
    const steps = this.runtime.recordedSteps;
    if (f?.kind === 'pending') {
      const t = f.turn;
      const fake: StepRecord = {
        type: 'step', index, startedAt: '', durationMs: 0, candidates: t.policyTurn.candidates, decision: t.policyTurn.decision, chosenText: t.text,
        actions: [], parseErrors: [], usage: t.policyTurn.usage, todos: [], scratchpad: [],
      };
      scopes.push(new Scope('Pending turn', this.handles.create(() => [{ name: 'action', value: JSON.stringify(t.text.slice(0, 400)) }, { name: 'actions', value: t.parsed.items.map((i) => (i.ok ? i.action.kind : `error: ${i.error.message.split('\n')[0]}`)).join(', ') }])));
      scopes.push(new Scope('Candidates', this.handles.create(() => candidatesScope(fake))));
      const prev = steps[steps.length - 1];
      if (prev) scopes.push(new Scope('Todos & scratchpad', this.handles.create(() => stateScope(prev))));
    } else if (f) {
      const s = f.step;
      scopes.push(new Scope('Step', this.handles.create(() => stepScope(s))));
      scopes.push(new Scope('Candidates', this.handles.create(() => candidatesScope(s)), s.candidates.length > 8));
      scopes.push(new Scope('Todos & scratchpad', this.handles.create(() => stateScope(s))));
      scopes.push(new Scope('Files changed', this.handles.create(() => filesScope(s))));
      scopes.push(new Scope('Reward & credit', this.handles.create(() => runScope(this.runtime.runFooter, index, this.runtime.recordedSteps))));
    }
    response.body = { scopes };
    this.sendResponse(response);
  }

  protected override variablesRequest(response: DebugProtocol.VariablesResponse, args: DebugProtocol.VariablesArguments): void {
    const make = this.handles.get(args.variablesReference);
    const nodes = make ? make() : [];
    const start = args.start ?? 0;
    const slice = args.count ? nodes.slice(start, start + args.count) : nodes;
    response.body = {
      variables: slice.map((n) => ({ name: n.name, value: n.value, variablesReference: n.children ? this.handles.create(n.children) : 0 })),
    };
    this.sendResponse(response);
  }

  protected override continueRequest(response: DebugProtocol.ContinueResponse): void {
    response.body = { allThreadsContinued: true };
    this.sendResponse(response);
    this.runtime.continue();
  }

  protected override nextRequest(response: DebugProtocol.NextResponse): void {
    this.sendResponse(response);
    this.runtime.step();
  }

  protected override stepInRequest(response: DebugProtocol.StepInResponse): void {
    this.sendResponse(response);
    this.runtime.step();
  }

  protected override stepOutRequest(response: DebugProtocol.StepOutResponse): void {
    this.sendResponse(response);
    this.runtime.step();
  }

  protected override async stepBackRequest(response: DebugProtocol.StepBackResponse): Promise<void> {
    this.sendResponse(response);
    await this.runtime.stepBack();
  }

  protected override async reverseContinueRequest(response: DebugProtocol.ReverseContinueResponse): Promise<void> {
    this.sendResponse(response);
    await this.runtime.reverseContinue();
  }

  /** Restart frame = fork the run from that step's checkpoint (TrajectoryRuntime.fork). */
  protected override async restartFrameRequest(response: DebugProtocol.RestartFrameResponse, args: DebugProtocol.RestartFrameArguments): Promise<void> {
    const index = args.frameId - 1;
    const error = this.runtime.forkError(index);
    if (error) return this.fail(response, error);
    this.sendResponse(response);
    await this.runtime.fork(index);
  }

  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    this.sendResponse(response);
    this.runtime.pause();
  }

  protected override customRequest(command: string, response: DebugProtocol.Response, args: unknown): void {
    if (command === SelectStepRequest.method) {
      const requested = (args as { step?: unknown } | undefined)?.step;
      const error = this.runtime.selectError(requested);
      if (error) return this.fail(response, error);
      this.sendResponse(response);
      return this.runtime.select(Number(requested));
    }
    if (command === StateRequest.method) {
      response.body = this.runtime.state();
      return this.sendResponse(response);
    }
    if (command === PendingTurnRequest.method) {
      response.body = { pending: this.runtime.pendingTurn() };
      return this.sendResponse(response);
    }
    if (command === DecideRequest.method) return void this.decide(response, args as HumanDecision);
    this.fail(response, { code: 1014, message: `Unknown request ${command}.` });
  }

  /** Human in the loop: the reply (labels written) goes out before the turn runs. */
  private async decide(response: DebugProtocol.Response, d: HumanDecision): Promise<void> {
    const error = await this.runtime.decide(d, (labels) => {
      if (labels !== undefined) response.body = { labels };
      this.sendResponse(response);
    });
    if (error) this.fail(response, error);
  }

  /** Error replies carry plain text: the DAP formatter treats braces in a format (JSON examples, ${workspaceFolder}) as placeholders. */
  private fail(response: DebugProtocol.Response, error: RuntimeError): void {
    this.sendErrorResponse(response, { id: error.code, format: '{_message}', variables: { _message: error.message }, showUser: true });
  }

  protected override async terminateRequest(response: DebugProtocol.TerminateResponse): Promise<void> {
    await this.runtime.shutdown();
    this.sendResponse(response);
    this.sendEvent(new TerminatedEvent());
  }

  protected override async disconnectRequest(response: DebugProtocol.DisconnectResponse): Promise<void> {
    await this.runtime.shutdown();
    this.sendResponse(response);
  }
}
