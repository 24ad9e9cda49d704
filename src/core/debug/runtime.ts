import { readTrajectory } from '../trajectory/reader';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import { errorMessage } from '../errors';
import type { BeforeExecuteDecision, PendingTurn } from '../agent/loop';
import type { ForkSource } from '../run/fork';
import { factsOfStep, firstHit, parseBreakpoint, type BreakpointSpec, type StepFacts } from './breakpoints';
import type { HumanDecision, PendingTurnInfo } from './turn';

/** The launch attributes the runtime itself reads; the editor's launch configuration carries more (model, limits), passed through to the live run. */
export interface RuntimeLaunchArgs {
  /** Replay this trajectory.jsonl. */
  trajectory?: string;
  /** Run the agent live on this task directory. */
  task?: string;
  stopOnEntry?: boolean;
  /** Live: stop before every action, not only at breakpoints. */
  stopBeforeEveryAction?: boolean;
  /** Breakpoints in addition to the ones set later (see breakpoints.ts for the syntax). */
  breakOn?: string[];
  /** Live: keep the checkpoint images when the session ends. */
  keepCheckpoints?: boolean;
  /** Live: step back and reverse continue re-run from the checkpoint before the target (default true). */
  stepBackRestores?: boolean;
}

/** What a live run tells the runtime. */
export interface LiveHooks {
  output(text: string): void;
  onHeader(h: TrajectoryHeader): void;
  onStep(s: StepRecord): void;
  beforeExecute(step: number, turn: PendingTurn): Promise<BeforeExecuteDecision>;
  onEnd(footer: TrajectoryFooter | undefined, trajectoryPath: string | undefined): void;
  onError(message: string): void;
}

/** A live run of the agent, as the runtime drives it (the editor's is startLiveRun in src/extension/debug/live.ts). */
export interface LiveRun {
  readonly outDir: string;
  readonly trajectoryPath: string;
  readonly labelsPath: string;
  cancel(): void;
  /** Settles once the run has ended and its sandbox is closed (whatever the outcome). */
  readonly done: Promise<void>;
  /** Human choices become preference labels next to the trajectory (labels.jsonl). */
  recordDecision(step: number, turn: PendingTurn, d: HumanDecision, history: StepRecord[]): Promise<number>;
}

/** What the runtime needs from its host to run the agent: injected, so tests can drive live stepping without Docker. */
export interface RuntimeHost<A extends RuntimeLaunchArgs> {
  startLive(args: A, hooks: LiveHooks, forkFrom?: ForkSource): LiveRun;
  /** Removes the checkpoint images of these runs (newest first). */
  removeCheckpoints(runIds: string[]): Promise<number>;
}

/** What the runtime reports; the DAP session turns each into a protocol event. */
export type RuntimeEvent =
  | { type: 'output'; text: string; category: 'console' | 'stderr' }
  /** Stopped at frame `step`; `pending` when that frame is the live turn waiting to run. */
  | { type: 'stopped'; step: number; reason: string; description: string; text?: string; hitBreakpointIds?: number[]; pending: boolean; trajectory?: string }
  /** The thread runs again after a decision (a custom request, which does not imply it as continue does). */
  | { type: 'continued' }
  | { type: 'terminated' }
  | { type: 'loaded'; trajectory: string; runId?: string; steps: number }
  | { type: 'step'; step: number }
  | { type: 'forked'; from: string; step: number; trajectory?: string };

/** A refused request: the DAP error id and the message shown to the user. */
export interface RuntimeError {
  code: number;
  message: string;
}

/** What `tbrl/state` answers. */
export interface DebugState {
  current: number;
  steps: number;
  /** The step of the turn waiting to run, or null. */
  pending: number | null;
  runId?: string;
  live: boolean;
  trajectory?: string;
}

/** A frame: a recorded step, or the live turn that has not run yet. */
export type Frame = { kind: 'step'; step: StepRecord } | { kind: 'pending'; turn: PendingTurn };

/** The verified breakpoint (its id) or why it was refused. */
export type BreakpointResult = { verified: true; id: number } | { verified: false; message: string };

interface Pending {
  step: number;
  turn: PendingTurn;
  resolve: (d: BeforeExecuteDecision) => void;
}

/**
 * The stepping state of a `tbrl` debug session, free of the editor and of the debug protocol:
 * the steps of a run (replayed, or written by a live run), where the user stands, breakpoints,
 * the live turn waiting to run and the decisions on it, step back and fork (restart frame). The
 * DAP adapter (src/extension/debug/session.ts) only translates requests into calls here and the
 * events reported here into protocol events. Replays move freely in both directions; live runs
 * pause inside the agent loop's beforeExecute hook, before a turn runs.
 */
export class TrajectoryRuntime<A extends RuntimeLaunchArgs = RuntimeLaunchArgs> {
  private header?: TrajectoryHeader;
  private steps: StepRecord[] = [];
  private footer?: TrajectoryFooter;
  private current = 0;
  private functionBreakpoints: BreakpointSpec[] = [];
  private launchBreakpoints: BreakpointSpec[] = [];
  private live?: LiveRun;
  private pending?: Pending;
  /** Live: stop before the next turn (step, pause, stopOnEntry). */
  private stopNext = false;
  private stopEveryAction = false;
  private launchArgs = {} as A;
  /** The trajectory the frames come from (replayed, or written by the live run). */
  private trajectoryPath?: string;
  /** Live runs this session started, oldest first: their checkpoints go when the session ends. */
  private ownRuns: string[] = [];
  /** Bumped when a run is replaced, so late events of the old run are ignored. */
  private generation = 0;
  /** Reason of the next live stop (a restarted frame stops with 'restart'). */
  private nextStopReason?: string;

  constructor(private readonly emit: (event: RuntimeEvent) => void, private readonly host: RuntimeHost<A>) {}

  // ---- what the adapter shows ----

  get runId(): string | undefined {
    return this.header?.runId;
  }

  /** The frame the user stands on. */
  get currentStep(): number {
    return this.current;
  }

  get recordedSteps(): readonly StepRecord[] {
    return this.steps;
  }

  get runFooter(): TrajectoryFooter | undefined {
    return this.footer;
  }

  /** Number of frames: the recorded steps plus the turn waiting to run. */
  get frameCount(): number {
    return this.steps.length + (this.pending ? 1 : 0);
  }

  frame(index: number): Frame | undefined {
    if (index === this.steps.length && this.pending) return { kind: 'pending', turn: this.pending.turn };
    const step = this.steps[index];
    return step ? { kind: 'step', step } : undefined;
  }

  state(): DebugState {
    return { current: this.current, steps: this.steps.length, pending: this.pending ? this.pending.step : null, runId: this.header?.runId, live: this.live !== undefined, trajectory: this.trajectoryPath };
  }

  /** The waiting turn is in no trajectory yet: the step inspector shows its candidates from here. */
  pendingTurn(): PendingTurnInfo | null {
    const p = this.pending;
    return p ? { step: p.step, text: p.turn.text, candidates: p.turn.policyTurn.candidates, chosen: p.turn.policyTurn.chosen, decision: p.turn.policyTurn.decision } : null;
  }

  // ---- launch ----

  /** Checks the launch and reads a replayed trajectory; nothing runs or stops until start(). */
  async load(args: A): Promise<RuntimeError | undefined> {
    this.launchArgs = args;
    const bad: string[] = [];
    for (const raw of args.breakOn ?? []) {
      const spec = parseBreakpoint(raw);
      if ('error' in spec) bad.push(spec.error);
      else this.launchBreakpoints.push(spec);
    }
    if (bad.length) return { code: 1001, message: `breakOn: ${bad.join(' ')}` };
    if (args.trajectory) return this.loadReplay(args.trajectory);
    if (args.task) {
      this.stopNext = args.stopOnEntry !== false;
      this.stopEveryAction = args.stopBeforeEveryAction === true;
      return undefined;
    }
    return { code: 1002, message: 'The launch configuration names neither a trajectory nor a task. Add "trajectory": "${workspaceFolder}/runs/<run>/trajectory.jsonl" to replay a run, or "task": "${workspaceFolder}/examples/hello-world" to run the agent live.' };
  }

  private async loadReplay(path: string): Promise<RuntimeError | undefined> {
    try {
      const t = await readTrajectory(path);
      this.trajectoryPath = path;
      this.header = t.header;
      this.steps = t.steps;
      this.footer = t.footer;
      for (const w of t.warnings) this.output(`warning: ${w}\n`);
    } catch (err) {
      return { code: 1003, message: errorMessage(err) };
    }
    if (this.steps.length === 0) {
      return { code: 1004, message: `${path} has no steps to replay (the run ended before its first step). Run the task again: tbrl run <task>.` };
    }
    return undefined;
  }

  /** Once the client has set its breakpoints: a replay stops on entry or runs to the first hit; a live run starts. */
  start(): void {
    const args = this.launchArgs;
    if (!args.trajectory) {
      if (args.task) this.startLive(args);
      return;
    }
    this.output(`Replaying ${this.header!.runId}: ${this.steps.length} step(s)${this.footer?.reward ? `, reward ${this.footer.reward.total.toFixed(3)}` : ''}\n`);
    this.emit({ type: 'loaded', trajectory: args.trajectory, runId: this.header!.runId, steps: this.steps.length });
    if (args.stopOnEntry !== false) return this.stopAt(0, 'entry');
    this.runForward(-1);
  }

  private output(text: string, category: 'console' | 'stderr' = 'console'): void {
    this.emit({ type: 'output', text, category });
  }

  private startLive(args: A, forkFrom?: ForkSource): void {
    const gen = ++this.generation;
    const mine = (): boolean => gen === this.generation;
    this.live = this.host.startLive(args, {
      output: (text) => mine() && this.output(text + '\n'),
      onHeader: (h) => {
        if (!this.ownRuns.includes(h.runId)) this.ownRuns.push(h.runId);
        if (mine()) this.header = h;
      },
      onStep: (s) => {
        if (!mine()) return;
        this.steps.push(s);
        this.emit({ type: 'step', step: s.index });
      },
      // A replaced run's pending turn is stopped, never run.
      beforeExecute: (step, turn) => (mine() ? this.onPending(step, turn) : Promise.resolve({ action: 'stop' })),
      onEnd: (footer, trajectory) => {
        if (!mine()) return;
        this.footer = footer;
        this.live = undefined;
        if (trajectory) this.emit({ type: 'loaded', trajectory, runId: this.header?.runId, steps: this.steps.length });
        if (this.steps.length === 0) return this.emit({ type: 'terminated' });
        // The finished run stays open as a replay so it can be inspected and stepped back through.
        this.stopAt(this.steps.length - 1, 'step', `run ended: ${footer?.endReason ?? 'error'}${footer?.reward ? `, reward ${footer.reward.total.toFixed(3)}` : ''}`);
      },
      onError: (message) => {
        if (!mine()) return;
        this.output(`error: ${message}\n`, 'stderr');
        this.emit({ type: 'terminated' });
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

  private allBreakpoints(): BreakpointSpec[] {
    return [...this.launchBreakpoints, ...this.functionBreakpoints];
  }

  private stopAt(index: number, reason: string, description?: string, hit?: BreakpointSpec): void {
    this.current = index;
    this.emit({
      type: 'stopped',
      step: index,
      reason,
      description: description ?? `step ${index}`,
      text: description,
      ...(hit ? { hitBreakpointIds: [this.functionBreakpoints.indexOf(hit) + 1].filter((n) => n > 0) } : {}),
      pending: this.pending !== undefined && index === this.steps.length,
      // A live run announces its file only when it ends (loaded), and panels follow stops by trajectory.
      trajectory: this.trajectoryPath,
    });
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
    if (from >= this.steps.length - 1 && !this.live) return this.emit({ type: 'terminated' });
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

  // ---- breakpoints ----

  /** Replaces the breakpoints set after launch; ids are positions in `names` (1-based), so a refused one keeps its slot. */
  setBreakpoints(names: readonly string[]): BreakpointResult[] {
    this.functionBreakpoints = [];
    return names.map((name): BreakpointResult => {
      const spec = parseBreakpoint(name);
      if ('error' in spec) {
        // Keep the slot so ids stay aligned with the client's list; a never-matching spec.
        this.functionBreakpoints.push({ type: 'regex', pattern: /(?!)/, text: name });
        return { verified: false, message: spec.error };
      }
      this.functionBreakpoints.push(spec);
      return { verified: true, id: this.functionBreakpoints.length };
    });
  }

  // ---- moving ----

  continue(): void {
    if (this.pending) return this.resolvePending({ action: 'continue' }, false);
    if (this.live) return; // running: the next breakpoint or the end will stop it
    this.runForward(this.current);
  }

  /** Next, step in and step out alike: one step forward, running the waiting turn when at it. */
  step(): void {
    if (this.current < this.steps.length - 1 || (this.pending && this.current < this.steps.length)) return this.stopAt(this.current + 1, 'step');
    if (this.pending) return this.resolvePending({ action: 'continue' }, true);
    if (this.live) {
      this.stopNext = true;
      return;
    }
    this.emit({ type: 'terminated' });
  }

  async stepBack(): Promise<void> {
    const target = Math.max(0, this.current - 1);
    if (this.current > 0 && (await this.restoreTo(target, 'step'))) return;
    this.stopAt(target, this.current === 0 ? 'entry' : 'step');
  }

  async reverseContinue(): Promise<void> {
    const { index, hit } = this.backwardTarget(this.current);
    if (index < this.current && (await this.restoreTo(index, hit ? 'function breakpoint' : 'step'))) return;
    if (hit) return this.stopAt(index, 'function breakpoint', `breakpoint ${hit.text} at step ${index}`, hit);
    this.stopAt(0, 'entry', 'start of run');
  }

  pause(): void {
    if (this.live && !this.pending) this.stopNext = true;
    else this.stopAt(this.current, 'pause');
  }

  /** Why frame `requested` (as the client sent it) cannot be selected, or undefined when it can (then call select). */
  selectError(requested: unknown): RuntimeError | undefined {
    const step = Number(requested);
    if (!Number.isInteger(step) || step < 0 || step >= this.frameCount) return { code: 1010, message: `Step ${String(requested)} is outside this run (0..${this.frameCount - 1}).` };
    return undefined;
  }

  select(step: number): void {
    this.stopAt(step, 'goto', `selected step ${step}`);
  }

  /**
   * While a live run is going, moving back to step `target` also undoes the steps from it on in the
   * container (launch "stepBackRestores", default true): the run is replaced by a fork from the
   * checkpoint of the step before `target` (or restarted from scratch for step 0), paused before
   * `target`. False for replays, for a live run that has ended (its session is a replay of it now:
   * looking back must not start a new run), when restoring is off, or when that checkpoint is
   * missing (said why); the caller then only moves through the recorded steps.
   */
  private async restoreTo(target: number, reason: string): Promise<boolean> {
    if (!this.live || this.launchArgs.stepBackRestores === false || target >= this.steps.length) return false;
    const base = this.steps[target - 1];
    if (target > 0 && !(base?.checkpoint && base.checkpointState)) {
      this.output(`Step ${target - 1} has no checkpoint${base?.checkpointError ? ` (${base.checkpointError})` : ''}, so going back only shows step ${target}; the container keeps its current state. Run with "checkpoint": true (the default) to undo steps.\n`);
      return false;
    }
    await this.replaceLiveRun(target, reason);
    return true;
  }

  // ---- fork (restart frame) ----

  /** Why the run cannot be restarted from step `index`, or undefined when it can (then call fork). */
  forkError(index: number): RuntimeError | undefined {
    const s = this.steps[index];
    if (!s) return { code: 1030, message: index === this.steps.length ? `Step ${index} has not run yet, so there is no state after it to restart from; restart the frame below it (step ${index - 1}).` : `There is no step ${index} in this run.` };
    if (!s.checkpoint || !s.checkpointState) {
      return { code: 1031, message: `Step ${index} has no checkpoint${s.checkpointError ? ` (${s.checkpointError})` : ''}, so the run cannot be restarted from it. Run with "checkpoint": true in launch.json (the default for live runs) or tbrl run --checkpoint.` };
    }
    if (!this.trajectoryPath || !(this.launchArgs.task ?? this.header?.task.dir)) return { code: 1032, message: 'This session has no trajectory to fork from yet; wait for the run to write its first step.' };
    return undefined;
  }

  /**
   * Restart frame = fork: a new live run starts from the checkpoint of step `index`'s container
   * (its files, cwd and environment after the step), with steps 0..index copied and the
   * conversation rebuilt. It replaces the run (the old one is stopped) and stops before step index+1.
   */
  async fork(index: number): Promise<void> {
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
      this.output('Starting the task again from its first step\n');
      return this.startLive(args);
    }
    this.output(`Going on from step ${keep - 1}: forking ${this.header?.runId ?? source} from its checkpoint\n`);
    this.startLive(args, { trajectoryPath: source, step: keep - 1 });
    this.emit({ type: 'forked', from: source, step: keep - 1, trajectory: this.trajectoryPath });
  }

  // ---- human in the loop ----

  /**
   * Accept the verifier's pick, pick another candidate, or run an edited turn. The labels written
   * go to `reply` (undefined when writing failed, said on stderr) before the turn runs; a refused
   * decision comes back as the error and changes nothing.
   */
  async decide(d: HumanDecision, reply: (labels: number | undefined) => void): Promise<RuntimeError | undefined> {
    const p = this.pending;
    if (!p || !this.live) return { code: 1020, message: 'No turn is waiting: a decision applies only when a live run is stopped before an action.' };
    const candidates = p.turn.policyTurn.candidates.map((c) => c.text);
    let decision: BeforeExecuteDecision;
    if (d.action === 'accept') decision = { action: 'continue' };
    else if (d.action === 'pick') {
      if (!Number.isInteger(d.candidate) || candidates[d.candidate!] === undefined) return { code: 1021, message: `No candidate ${String(d.candidate)}: this turn has ${candidates.length} (0..${candidates.length - 1}).` };
      decision = d.candidate === p.turn.policyTurn.chosen ? { action: 'continue' } : { action: 'replace', text: candidates[d.candidate!] };
    } else if (d.action === 'edit') {
      if (typeof d.text !== 'string' || d.text.trim() === '') return { code: 1022, message: 'An edited turn needs its text, e.g. {"action":"edit","text":"<bash>\\ncmd: ls\\n</bash>"}.' };
      decision = { action: 'replace', text: d.text };
    } else if (d.action === 'stop') decision = { action: 'stop' };
    else return { code: 1023, message: `Unknown decision "${String((d as { action?: unknown }).action)}"; use accept, pick, edit or stop.` };
    let labels: number | undefined;
    try {
      labels = await this.live.recordDecision(p.step, p.turn, d, this.steps);
    } catch (err) {
      this.output(`labels not written: ${errorMessage(err)}\n`, 'stderr');
    }
    reply(labels);
    this.resolvePending(decision, d.action !== 'stop' && d.stopAfter === true);
    this.emit({ type: 'continued' });
    return undefined;
  }

  // ---- end ----

  /**
   * Stops the live run and removes the checkpoint images of the runs this session started: they
   * serve restart frame within the session; `keepCheckpoints: true` keeps them for a later fork.
   */
  async shutdown(): Promise<void> {
    if (this.pending) this.resolvePending({ action: 'stop' }, false);
    const live = this.live;
    live?.cancel();
    await live?.done;
    if (this.launchArgs.keepCheckpoints || this.ownRuns.length === 0) return;
    const runs = this.ownRuns;
    this.ownRuns = [];
    try {
      await this.host.removeCheckpoints(runs);
    } catch (err) {
      this.output(`checkpoints not removed (\`tbrl gc\` removes them once the editor has exited): ${errorMessage(err)}\n`, 'stderr');
    }
  }
}
