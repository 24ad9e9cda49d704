import { ContinuedEvent, DebugSession, Handles, InitializedEvent, OutputEvent, Scope, Source, StackFrame, StoppedEvent, TerminatedEvent, Thread, Breakpoint, Event } from '@vscode/debugadapter';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { readTrajectory } from '../../core/trajectory/reader';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../core/trajectory/schema';
import { stepObservation } from '../../core/trajectory/observation';
import { actionSummary } from '../../core/trajectory/replay';
import { errorMessage } from '../../core/errors';
import type { BeforeExecuteDecision, PendingTurn } from '../../core/agent/loop';
import { factsOfStep, firstHit, parseBreakpoint, type BreakpointSpec, type StepFacts } from './breakpoints';
import { candidatesScope, filesScope, runScope, stateScope, stepScope, type VarNode } from './variables';
import type { LaunchArgs } from './launch-args';
import { removeRunCheckpoints, startLiveRun, type LiveRun, type HumanDecision } from './live';
import type { ForkSource } from '../../core/run/fork';
import type { PendingTurnInfo } from './decisions';

const THREAD_ID = 1;

interface Pending {
  step: number;
  turn: PendingTurn;
  resolve: (d: BeforeExecuteDecision) => void;
}

/**
 * The `tbrl` debug adapter. Stack frames are the steps of a run (newest on top), the current
 * step's turn is a virtual source, and the Variables view shows the step, its candidates, agent
 * state, files written and the run's reward and credit. Replays move freely in both directions;
 * live runs pause inside the agent loop's beforeExecute hook, before a turn runs.
 */
export class TbrlDebugSession extends DebugSession {
  private header?: TrajectoryHeader;
  private steps: StepRecord[] = [];
  private footer?: TrajectoryFooter;
  private current = 0;
  private functionBreakpoints: BreakpointSpec[] = [];
  private launchBreakpoints: BreakpointSpec[] = [];
  private handles = new Handles<() => VarNode[]>();
  private configured!: Promise<void>;
  private markConfigured!: () => void;
  private live?: LiveRun;
  private pending?: Pending;
  /** Live: stop before the next turn (step, pause, stopOnEntry). */
  private stopNext = false;
  private stopEveryAction = false;
  private launchArgs: LaunchArgs = {};
  /** The trajectory the frames come from (replayed, or written by the live run). */
  private trajectoryPath?: string;
  /** Live runs this session started, oldest first: their checkpoints go when the session ends. */
  private ownRuns: string[] = [];
  /** Bumped when a run is replaced, so late events of the old run are ignored. */
  private generation = 0;
  /** Reason of the next live stop (a restarted frame stops with 'restart'). */
  private nextStopReason?: string;

  constructor() {
    super();
    this.setDebuggerLinesStartAt1(true);
    this.setDebuggerColumnsStartAt1(true);
    this.configured = new Promise((r) => (this.markConfigured = r));
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

  protected override async launchRequest(response: DebugProtocol.LaunchResponse, maybeArgs: LaunchArgs | undefined): Promise<void> {
    const args = maybeArgs ?? {};
    this.launchArgs = args;
    const bad: string[] = [];
    for (const raw of args.breakOn ?? []) {
      const spec = parseBreakpoint(raw);
      if ('error' in spec) bad.push(spec.error);
      else this.launchBreakpoints.push(spec);
    }
    if (bad.length) return this.fail(response, 1001, `breakOn: ${bad.join(' ')}`);
    if (args.trajectory) return this.launchReplay(response, args);
    if (args.task) return this.launchLive(response, args);
    this.fail(response, 1002, 'The launch configuration names neither a trajectory nor a task. Add "trajectory": "${workspaceFolder}/runs/<run>/trajectory.jsonl" to replay a run, or "task": "${workspaceFolder}/examples/hello-world" to run the agent live.');
  }

  private async launchReplay(response: DebugProtocol.LaunchResponse, args: LaunchArgs): Promise<void> {
    try {
      const t = await readTrajectory(args.trajectory!);
      this.trajectoryPath = args.trajectory;
      this.header = t.header;
      this.steps = t.steps;
      this.footer = t.footer;
      for (const w of t.warnings) this.sendEvent(new OutputEvent(`warning: ${w}\n`, 'console'));
    } catch (err) {
      return this.fail(response, 1003, errorMessage(err));
    }
    if (this.steps.length === 0) {
      return this.fail(response, 1004, `${args.trajectory} has no steps to replay (the run ended before its first step). Run the task again: tbrl run <task>.`);
    }
    this.sendResponse(response);
    this.sendEvent(new OutputEvent(`Replaying ${this.header!.runId}: ${this.steps.length} step(s)${this.footer?.reward ? `, reward ${this.footer.reward.total.toFixed(3)}` : ''}\n`, 'console'));
    await this.configured;
    this.sendEvent(new Event('tbrl/loaded', { trajectory: args.trajectory, runId: this.header!.runId, steps: this.steps.length }));
    if (args.stopOnEntry !== false) return this.stopAt(0, 'entry');
    this.runForward(-1);
  }

  private async launchLive(response: DebugProtocol.LaunchResponse, args: LaunchArgs): Promise<void> {
    this.stopNext = args.stopOnEntry !== false;
    this.stopEveryAction = args.stopBeforeEveryAction === true;
    this.sendResponse(response);
    await this.configured;
    this.startLive(args);
  }

  private startLive(args: LaunchArgs, forkFrom?: ForkSource): void {
    const gen = ++this.generation;
    const mine = (): boolean => gen === this.generation;
    this.live = startLiveRun(args, {
      output: (text) => mine() && this.sendEvent(new OutputEvent(text + '\n', 'console')),
      onHeader: (h) => {
        if (!this.ownRuns.includes(h.runId)) this.ownRuns.push(h.runId);
        if (mine()) this.header = h;
      },
      onStep: (s) => {
        if (!mine()) return;
        this.steps.push(s);
        this.sendEvent(new Event('tbrl/step', { step: s.index }));
      },
      // A replaced run's pending turn is stopped, never run.
      beforeExecute: (step, turn) => (mine() ? this.onPending(step, turn) : Promise.resolve({ action: 'stop' })),
      onEnd: (footer, trajectory) => {
        if (!mine()) return;
        this.footer = footer;
        this.live = undefined;
        if (trajectory) this.sendEvent(new Event('tbrl/loaded', { trajectory, runId: this.header?.runId, steps: this.steps.length }));
        if (this.steps.length === 0) return this.sendEvent(new TerminatedEvent());
        // The finished run stays open as a replay so it can be inspected and stepped back through.
        this.stopAt(this.steps.length - 1, 'step', `run ended: ${footer?.endReason ?? 'error'}${footer?.reward ? `, reward ${footer.reward.total.toFixed(3)}` : ''}`);
      },
      onError: (message) => {
        if (!mine()) return;
        this.sendEvent(new OutputEvent(`error: ${message}\n`, 'stderr'));
        this.sendEvent(new TerminatedEvent());
      },
    }, forkFrom);
    this.trajectoryPath = this.live.trajectoryPath;
  }

  private onPending(step: number, turn: PendingTurn): Promise<BeforeExecuteDecision> {
    const facts: StepFacts = {
      kinds: turn.parsed.items.flatMap((i) => (i.ok ? [i.action.kind] : [])),
      commands: turn.parsed.items.flatMap((i) => (i.ok && typeof i.action.body.cmd === 'string' ? [i.action.body.cmd] : [])),
      text: turn.text,
      margin: turn.policyTurn.decision?.margin,
      error: this.steps.length > 0 ? factsOfStep(this.steps[this.steps.length - 1]).error : undefined,
    };
    const hit = firstHit(this.allBreakpoints(), facts);
    if (!this.stopNext && !this.stopEveryAction && !hit) return Promise.resolve({ action: 'continue' });
    const reason = hit ? 'function breakpoint' : this.nextStopReason ?? (this.steps.length === 0 && step === 0 ? 'entry' : 'step');
    this.nextStopReason = undefined;
    this.stopNext = false;
    return new Promise((resolve) => {
      this.pending = { step, turn, resolve };
      this.stopAt(this.steps.length, reason, hit ? `breakpoint ${hit.text}` : `before step ${step}`, hit);
    });
  }

  /** Number of frames: the recorded steps plus the turn waiting to run. */
  private get frameCount(): number {
    return this.steps.length + (this.pending ? 1 : 0);
  }

  private allBreakpoints(): BreakpointSpec[] {
    return [...this.launchBreakpoints, ...this.functionBreakpoints];
  }

  private stopAt(index: number, reason: string, description?: string, hit?: BreakpointSpec): void {
    this.current = index;
    this.handles.reset();
    const ev = new StoppedEvent(reason, THREAD_ID) as DebugProtocol.StoppedEvent;
    ev.body.description = description ?? `step ${index}`;
    ev.body.text = description;
    if (hit) ev.body.hitBreakpointIds = [this.functionBreakpoints.indexOf(hit) + 1].filter((n) => n > 0);
    this.sendEvent(ev);
    // The trajectory too: a live run announces its file only when it ends (tbrl/loaded), and panels follow stops by trajectory.
    this.sendEvent(new Event('tbrl/stopped', { step: index, pending: this.pending !== undefined && index === this.steps.length, trajectory: this.trajectoryPath }));
  }

  /** Replay forward from `from` (exclusive) to the next breakpoint hit, else to the last step. */
  private runForward(from: number): void {
    const bps = this.allBreakpoints();
    if (bps.length) {
      for (let i = from + 1; i < this.steps.length; i++) {
        const hit = firstHit(bps, factsOfStep(this.steps[i], this.steps[i - 1]));
        if (hit) return this.stopAt(i, 'function breakpoint', `breakpoint ${hit.text} at step ${i}`, hit);
      }
    }
    if (from >= this.steps.length - 1 && !this.live) {
      this.sendEvent(new TerminatedEvent());
      return;
    }
    this.stopAt(this.steps.length - 1, 'step', `end of run${this.footer?.reward ? `: reward ${this.footer.reward.total.toFixed(3)}` : ''}`);
  }

  /** Where reverse continue from `from` stops: the nearest earlier breakpoint hit, else step 0. */
  private backwardTarget(from: number): { index: number; hit?: BreakpointSpec } {
    const bps = this.allBreakpoints();
    for (let i = Math.min(from, this.steps.length) - 1; i >= 0 && bps.length; i--) {
      const hit = firstHit(bps, factsOfStep(this.steps[i], this.steps[i - 1]));
      if (hit) return { index: i, hit };
    }
    return { index: 0 };
  }

  private resolvePending(decision: BeforeExecuteDecision, stopNext: boolean): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    this.stopNext = stopNext;
    p.resolve(decision);
  }

  protected override setFunctionBreakPointsRequest(response: DebugProtocol.SetFunctionBreakpointsResponse, args: DebugProtocol.SetFunctionBreakpointsArguments): void {
    this.functionBreakpoints = [];
    const out: DebugProtocol.Breakpoint[] = [];
    for (const b of args.breakpoints) {
      const spec = parseBreakpoint(b.name);
      if ('error' in spec) {
        // Keep the slot so ids stay aligned with the client's list; a never-matching spec.
        this.functionBreakpoints.push({ type: 'regex', pattern: /(?!)/, text: b.name });
        const bp = new Breakpoint(false) as DebugProtocol.Breakpoint;
        bp.message = spec.error;
        out.push(bp);
      } else {
        this.functionBreakpoints.push(spec);
        const bp = new Breakpoint(true) as DebugProtocol.Breakpoint;
        bp.id = this.functionBreakpoints.length;
        out.push(bp);
      }
    }
    response.body = { breakpoints: out };
    this.sendResponse(response);
  }

  protected override threadsRequest(response: DebugProtocol.ThreadsResponse): void {
    response.body = { threads: [new Thread(THREAD_ID, this.header ? `agent ${this.header.runId}` : 'agent')] };
    this.sendResponse(response);
  }

  protected override stackTraceRequest(response: DebugProtocol.StackTraceResponse, args: DebugProtocol.StackTraceArguments): void {
    const start = args.startFrame ?? 0;
    const levels = args.levels || 1000;
    const frames: StackFrame[] = [];
    for (let i = this.current - start; i >= 0 && frames.length < levels; i--) frames.push(this.frame(i));
    response.body = { stackFrames: frames, totalFrames: this.current + 1 };
    this.sendResponse(response);
  }

  private frame(index: number): StackFrame {
    const src = new Source(`step-${index}.tbrl.yaml`, undefined, index + 1, 'tbrl-step');
    if (index === this.steps.length && this.pending) {
      const kinds = this.pending.turn.parsed.items.map((i) => (i.ok ? i.action.kind : 'parse_error'));
      return new StackFrame(index + 1, `#${index} ▶ ${kinds.join(', ') || '(no action)'} (not run yet)`, src, 1, 1);
    }
    const s = this.steps[index];
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
    if (index === this.steps.length && this.pending) {
      const t = this.pending.turn;
      const others = t.policyTurn.candidates.map((_c, i) => `# candidate ${i}${i === t.policyTurn.chosen ? ' (chosen)' : ''}${t.policyTurn.decision ? ` score ${t.policyTurn.decision.scores[i]?.toFixed(3)}` : ''}`);
      return `${t.text}\n\n# ── not run yet ──\n${others.join('\n')}\n`;
    }
    const s = this.steps[index];
    if (!s) return `# step ${index} does not exist\n`;
    const obs = stepObservation(s).split('\n').map((l) => `# ${l}`).join('\n');
    return `${s.chosenText}\n\n# ── observation ──\n${obs}\n`;
  }

  protected override scopesRequest(response: DebugProtocol.ScopesResponse, args: DebugProtocol.ScopesArguments): void {
    const index = args.frameId - 1;
    const scopes: Scope[] = [];
    if (index === this.steps.length && this.pending) {
      const t = this.pending.turn;
      const fake: StepRecord = {
        type: 'step', index, startedAt: '', durationMs: 0, candidates: t.policyTurn.candidates, decision: t.policyTurn.decision, chosenText: t.text,
        actions: [], parseErrors: [], usage: t.policyTurn.usage, todos: [], scratchpad: [],
      };
      scopes.push(new Scope('Pending turn', this.handles.create(() => [{ name: 'action', value: JSON.stringify(t.text.slice(0, 400)) }, { name: 'actions', value: t.parsed.items.map((i) => (i.ok ? i.action.kind : `error: ${i.error.message.split('\n')[0]}`)).join(', ') }])));
      scopes.push(new Scope('Candidates', this.handles.create(() => candidatesScope(fake))));
      const prev = this.steps[this.steps.length - 1];
      if (prev) scopes.push(new Scope('Todos & scratchpad', this.handles.create(() => stateScope(prev))));
    } else {
      const s = this.steps[index];
      if (s) {
        scopes.push(new Scope('Step', this.handles.create(() => stepScope(s))));
        scopes.push(new Scope('Candidates', this.handles.create(() => candidatesScope(s)), s.candidates.length > 8));
        scopes.push(new Scope('Todos & scratchpad', this.handles.create(() => stateScope(s))));
        scopes.push(new Scope('Files changed', this.handles.create(() => filesScope(s))));
        scopes.push(new Scope('Reward & credit', this.handles.create(() => runScope(this.footer, index, this.steps))));
      }
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
    if (this.pending) return this.resolvePending({ action: 'continue' }, false);
    if (this.live) return; // running: the next breakpoint or the end will stop it
    this.runForward(this.current);
  }

  protected override nextRequest(response: DebugProtocol.NextResponse): void {
    this.sendResponse(response);
    this.stepForward();
  }

  protected override stepInRequest(response: DebugProtocol.StepInResponse): void {
    this.sendResponse(response);
    this.stepForward();
  }

  protected override stepOutRequest(response: DebugProtocol.StepOutResponse): void {
    this.sendResponse(response);
    this.stepForward();
  }

  private stepForward(): void {
    if (this.current < this.steps.length - 1 || (this.pending && this.current < this.steps.length)) return this.stopAt(this.current + 1, 'step');
    if (this.pending) return this.resolvePending({ action: 'continue' }, true);
    if (this.live) {
      this.stopNext = true;
      return;
    }
    this.sendEvent(new TerminatedEvent());
  }

  protected override async stepBackRequest(response: DebugProtocol.StepBackResponse): Promise<void> {
    this.sendResponse(response);
    const target = Math.max(0, this.current - 1);
    if (this.current > 0 && (await this.restoreTo(target, 'step'))) return;
    this.stopAt(target, this.current === 0 ? 'entry' : 'step');
  }

  protected override async reverseContinueRequest(response: DebugProtocol.ReverseContinueResponse): Promise<void> {
    this.sendResponse(response);
    const { index, hit } = this.backwardTarget(this.current);
    if (index < this.current && (await this.restoreTo(index, hit ? 'function breakpoint' : 'step'))) return;
    if (hit) return this.stopAt(index, 'function breakpoint', `breakpoint ${hit.text} at step ${index}`, hit);
    this.stopAt(0, 'entry', 'start of run');
  }

  /**
   * While a live run is going, moving back to step `target` also undoes the steps from it on in the
   * container (launch.json "stepBackRestores", default true): the run is replaced by a fork from the
   * checkpoint of the step before `target` (or restarted from scratch for step 0), paused before
   * `target`. False for replays, for a live run that has ended (its session is a replay of it now:
   * looking back must not start a new run), when restoring is off, or when that checkpoint is
   * missing (said why); the caller then only moves through the recorded steps.
   */
  private async restoreTo(target: number, reason: string): Promise<boolean> {
    if (!this.live || this.launchArgs.stepBackRestores === false || target >= this.steps.length) return false;
    const base = this.steps[target - 1];
    if (target > 0 && !(base?.checkpoint && base.checkpointState)) {
      this.sendEvent(new OutputEvent(`Step ${target - 1} has no checkpoint${base?.checkpointError ? ` (${base.checkpointError})` : ''}, so going back only shows step ${target}; the container keeps its current state. Run with "checkpoint": true (the default) to undo steps.\n`, 'console'));
      return false;
    }
    await this.replaceLiveRun(target, reason);
    return true;
  }

  /**
   * Restart frame = fork: a new live run starts from the checkpoint of that step's container (its
   * files, cwd and environment after the step), with steps 0..k copied and the conversation rebuilt.
   * It replaces the run in this same session (the old one is stopped) and stops before step k+1.
   */
  protected override async restartFrameRequest(response: DebugProtocol.RestartFrameResponse, args: DebugProtocol.RestartFrameArguments): Promise<void> {
    const index = args.frameId - 1;
    const s = this.steps[index];
    if (!s) return this.fail(response, 1030, index === this.steps.length ? `Step ${index} has not run yet, so there is no state after it to restart from; restart the frame below it (step ${index - 1}).` : `There is no step ${index} in this run.`);
    if (!s.checkpoint || !s.checkpointState) {
      return this.fail(response, 1031, `Step ${index} has no checkpoint${s.checkpointError ? ` (${s.checkpointError})` : ''}, so the run cannot be restarted from it. Run with "checkpoint": true in launch.json (the default for live runs) or tbrl run --checkpoint.`);
    }
    if (!this.trajectoryPath || !(this.launchArgs.task ?? this.header?.task.dir)) return this.fail(response, 1032, 'This session has no trajectory to fork from yet; wait for the run to write its first step.');
    this.sendResponse(response);
    await this.replaceLiveRun(index + 1, 'restart');
  }

  /**
   * Stops the current run and starts one that keeps the first `keep` steps: a fork from step
   * keep-1's checkpoint, or the task from scratch when keep is 0. It stops before its first turn.
   */
  private async replaceLiveRun(keep: number, reason: string): Promise<void> {
    const source = this.trajectoryPath!;
    const task = this.launchArgs.task ?? this.header!.task.dir;
    const old = this.live;
    this.generation++;
    if (this.pending) this.resolvePending({ action: 'stop' }, false);
    old?.cancel();
    await old?.done;
    this.steps = this.steps.slice(0, keep);
    this.footer = undefined;
    this.stopNext = true;
    this.nextStopReason = reason;
    const args = { ...this.launchArgs, task, trajectory: undefined };
    if (keep === 0) {
      this.sendEvent(new OutputEvent('Starting the task again from its first step\n', 'console'));
      return this.startLive(args);
    }
    this.sendEvent(new OutputEvent(`Going on from step ${keep - 1}: forking ${this.header?.runId ?? source} from its checkpoint\n`, 'console'));
    this.startLive(args, { trajectoryPath: source, step: keep - 1 });
    this.sendEvent(new Event('tbrl/forked', { from: source, step: keep - 1, trajectory: this.trajectoryPath }));
  }

  protected override pauseRequest(response: DebugProtocol.PauseResponse): void {
    this.sendResponse(response);
    if (this.live && !this.pending) this.stopNext = true;
    else this.stopAt(this.current, 'pause');
  }

  protected override customRequest(command: string, response: DebugProtocol.Response, args: Record<string, unknown>): void {
    if (command === 'tbrl/selectStep') {
      const step = Number(args?.step);
      if (!Number.isInteger(step) || step < 0 || step >= this.frameCount) {
        return this.fail(response, 1010, `Step ${String(args?.step)} is outside this run (0..${this.frameCount - 1}).`);
      }
      this.sendResponse(response);
      return this.stopAt(step, 'goto', `selected step ${step}`);
    }
    if (command === 'tbrl/state') {
      response.body = { current: this.current, steps: this.steps.length, pending: this.pending ? this.pending.step : null, runId: this.header?.runId, live: this.live !== undefined, trajectory: this.trajectoryPath };
      return this.sendResponse(response);
    }
    if (command === 'tbrl/pendingTurn') {
      // The waiting turn is in no trajectory yet: the step inspector shows its candidates from here.
      const p = this.pending;
      const pending: PendingTurnInfo | null = p ? { step: p.step, text: p.turn.text, candidates: p.turn.policyTurn.candidates, chosen: p.turn.policyTurn.chosen, decision: p.turn.policyTurn.decision } : null;
      response.body = { pending };
      return this.sendResponse(response);
    }
    if (command === 'tbrl/decide') return void this.decide(response, args as unknown as HumanDecision);
    this.fail(response, 1014, `Unknown request ${command}.`);
  }

  /** Human in the loop: accept the verifier's pick, pick another candidate, or run an edited turn. */
  private async decide(response: DebugProtocol.Response, d: HumanDecision): Promise<void> {
    const p = this.pending;
    if (!p || !this.live) return this.fail(response, 1020, 'No turn is waiting: a decision applies only when a live run is stopped before an action.');
    const candidates = p.turn.policyTurn.candidates.map((c) => c.text);
    let decision: BeforeExecuteDecision;
    if (d.action === 'accept') decision = { action: 'continue' };
    else if (d.action === 'pick') {
      if (!Number.isInteger(d.candidate) || candidates[d.candidate!] === undefined) return this.fail(response, 1021, `No candidate ${String(d.candidate)}: this turn has ${candidates.length} (0..${candidates.length - 1}).`);
      decision = d.candidate === p.turn.policyTurn.chosen ? { action: 'continue' } : { action: 'replace', text: candidates[d.candidate!] };
    } else if (d.action === 'edit') {
      if (typeof d.text !== 'string' || d.text.trim() === '') return this.fail(response, 1022, 'An edited turn needs its text, e.g. {"action":"edit","text":"<bash>\\ncmd: ls\\n</bash>"}.');
      decision = { action: 'replace', text: d.text };
    } else if (d.action === 'stop') decision = { action: 'stop' };
    else return this.fail(response, 1023, `Unknown decision "${String((d as { action?: unknown }).action)}"; use accept, pick, edit or stop.`);
    try {
      const written = await this.live.recordDecision(p.step, p.turn, d, this.steps);
      response.body = { labels: written };
    } catch (err) {
      this.sendEvent(new OutputEvent(`labels not written: ${errorMessage(err)}\n`, 'stderr'));
    }
    this.sendResponse(response);
    this.resolvePending(decision, d.action !== 'stop' && d.stopAfter === true);
    // Unlike continue, a custom request does not tell VS Code the thread runs: without this it keeps the old stop's details.
    this.sendEvent(new ContinuedEvent(THREAD_ID));
  }

  /** Error replies carry plain text: the DAP formatter treats braces in a format (JSON examples, ${workspaceFolder}) as placeholders. */
  private fail(response: DebugProtocol.Response, id: number, text: string): void {
    this.sendErrorResponse(response, { id, format: '{_message}', variables: { _message: text }, showUser: true });
  }

  protected override async terminateRequest(response: DebugProtocol.TerminateResponse): Promise<void> {
    await this.shutdownLive();
    this.sendResponse(response);
    this.sendEvent(new TerminatedEvent());
  }

  protected override async disconnectRequest(response: DebugProtocol.DisconnectResponse): Promise<void> {
    await this.shutdownLive();
    this.sendResponse(response);
  }

  /**
   * Stops the live run and removes the checkpoint images of the runs this session started: they
   * serve restart frame within the session; `keepCheckpoints: true` keeps them for a later fork.
   */
  private async shutdownLive(): Promise<void> {
    if (this.pending) this.resolvePending({ action: 'stop' }, false);
    const live = this.live;
    live?.cancel();
    await live?.done;
    if (this.launchArgs.keepCheckpoints || this.ownRuns.length === 0) return;
    const runs = this.ownRuns;
    this.ownRuns = [];
    try {
      await removeRunCheckpoints(runs);
    } catch (err) {
      this.sendEvent(new OutputEvent(`checkpoints not removed (\`tbrl gc\` removes them once the editor has exited): ${errorMessage(err)}\n`, 'stderr'));
    }
  }
}
