import type { TbrlError } from '../errors';
import type { Policy } from '../agent/policy';
import type { BeforeExecuteDecision, LoopResult, PendingTurn } from '../agent/loop';
import type { ImageSource, Sandbox, SandboxProvider } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { TrajectoryWriter } from '../trajectory/writer';
import type { DepgpoRecord, RewardRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import type { VerifierTrace } from '../trace/types';
import type { TestRunResult } from '../reward/tests';
import type { RewardHook } from '../reward/hooks';
import type { LocalServer } from '../serve/launch';
import type { RunConfigInput, ResolvedRunConfig } from './config';
import type { ForkSource, PreparedFork } from './fork';

/** The phases of a run, in order (run-task.ts lists them; phases/ has one file each). */
export type PhaseName = 'prepare' | 'sandbox' | 'agent' | 'score' | 'credit' | 'snapshot' | 'finalize';

/** What a phase reports; the run stamps each event with the name of the phase that sent it. */
export type RunEvent =
  | { type: 'info'; message: string }
  | { type: 'build'; line: string }
  /** A phase's headline (not every phase has one: snapshot and a skipped score or credit say nothing). */
  | { type: 'phase'; message: string }
  | { type: 'step-start'; step: number }
  | { type: 'step'; step: StepRecord }
  | { type: 'warning'; message: string };

export type RunProgress = RunEvent & { phase: PhaseName };

export interface RunTaskOptions extends RunConfigInput {
  taskDir: string;
  /** Exact output directory; default `<runsDir>/<task>-<timestamp>`. */
  outDir?: string;
  /** Parent of per-run directories; default `<cwd>/runs`. */
  runsDir?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** A ready policy (scripted in tests, human in the editor); skips endpoint resolution. */
  policyOverride?: Policy;
  sandboxProvider?: SandboxProvider;
  onProgress?: (event: RunProgress) => void;
  signal?: AbortSignal;
  beforeExecute?: (step: number, turn: PendingTurn) => Promise<BeforeExecuteDecision>;
  /** Commit the container after each step so the debugger can fork or step back. */
  checkpoint?: boolean;
  /** Trace commands for DepGPO (default on; the sandbox says when it cannot). */
  trace?: boolean;
  /** Skip the reward (e.g. an editor session that only explores). */
  skipReward?: boolean;
  /** Sequential Refine: what the previous attempt did and how it ended, shown with the task. */
  previousAttempt?: string;
  /** Privilege keys the user allowed by name (tasks/confine.ts); recorded in the header. */
  allowPrivileges?: string[];
  /**
   * Branch from step k of an earlier run: its container comes back from step k's checkpoint, steps
   * 0..k are copied into the new trajectory (header.forkedFrom says from where) and the policy goes
   * on from step k+1. `maxSteps` still counts the whole run, copied steps included.
   */
  forkFrom?: ForkSource;
  /** An in-memory task (e.g. the user's own workspace); `taskDir` is then only its label. */
  task?: Task;
  /** Start the sandbox from this image source instead of task.environment (e.g. a devcontainer, workspace copied in). */
  sandboxImage?: ImageSource;
  /** Score the run with this instead of the task's tests (e.g. a user's verify command). */
  scoreRun?: (sandbox: Sandbox, signal?: AbortSignal) => Promise<RewardRecord>;
  /** Last look at the container before it is removed (e.g. to collect the workspace changes). */
  beforeClose?: (sandbox: Sandbox, outDir: string) => Promise<void>;
  /**
   * Takes the sandbox's removal off the run's path: called with the close instead of awaiting it;
   * the caller owns the close from then on (an eval job awaits every one before it ends). Resolves
   * once the run may go on (at once, or when the caller's bound on pending removals has room).
   */
  deferClose?: (close: () => Promise<void>) => Promise<void>;
}

export interface RunTaskResult {
  runId: string;
  outDir: string;
  trajectoryPath: string;
  reportPath: string;
  header: TrajectoryHeader;
  steps: StepRecord[];
  footer: TrajectoryFooter;
  policyDescription: string;
  warnings: string[];
}

/**
 * How a run that got as far as having a run directory ended: always its result (the trajectory
 * and report say what happened), and the error when it failed. A run that could not start (the
 * task does not load, the configuration is refused, the fork source is unusable) rejects instead.
 */
export interface RunOutcome<R = RunTaskResult> {
  result: R;
  error?: TbrlError;
}

/** The one value the phases share: what prepare settled, then what each later phase adds. */
export interface RunContext {
  readonly options: RunTaskOptions;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** The phase running now; progress events carry it. */
  phase: PhaseName;
  progress(event: RunEvent): void;
  /** A warning: kept for the report and result, and sent as a progress event. */
  warn(message: string): void;
  readonly warnings: string[];

  // prepare
  readonly fork?: PreparedFork;
  readonly task: Task;
  readonly config: ResolvedRunConfig;
  readonly policy: Policy;
  readonly prompt: { version: string; text: string };
  readonly previousAttempt?: string;
  readonly maxTimeSec: number;
  readonly runId: string;
  readonly outDir: string;
  readonly trajectoryPath: string;
  readonly reportPath: string;
  /** Completed by the sandbox phase (header.sandbox) before it is written. */
  readonly header: TrajectoryHeader;
  /** `tbrl serve` started for a local model; stopped when the run ends. */
  localServer?: LocalServer;
  /** Every step of the trajectory in order, copied fork steps first. */
  readonly steps: StepRecord[];

  // sandbox
  provider?: SandboxProvider;
  /** The sandbox as the provider made it, before tracing wraps it. */
  inner?: Sandbox;
  /** What the agent, the tests and the snapshot use (traced when tracing could start). */
  sandbox?: Sandbox;
  /** Applied in order by the agent phase (per step) and the score phase (to the test reward). */
  rewardHooks: RewardHook[];
  writer?: TrajectoryWriter;

  // agent
  loop?: LoopResult;
  /** Harbor [[steps]]: the steps' verifiers already scored the run. */
  stepsTestRun?: TestRunResult;

  // score
  reward?: RewardRecord;
  verifierTrace?: VerifierTrace;
  /** Set when the task's tests scored the run: DepGPO credit needs their trace. */
  scoredByTests?: boolean;

  // credit
  depgpo?: DepgpoRecord;

  /** What stopped the pipeline; finalize records it in the footer and returns it as the error. */
  failure?: unknown;
}

/** One step of the pipeline. A phase that throws ends the run; finalize still runs. */
export interface RunPhase {
  readonly name: PhaseName;
  run(ctx: RunContext): Promise<void>;
}

/** The caller interrupted or cancelled the run (its signal fired). */
export function aborted(ctx: RunContext): boolean {
  return !!ctx.options.signal?.aborted;
}

/** The loop ended by an interrupt or cancel: no reward and no credit for it. */
export function interrupted(ctx: RunContext): boolean {
  return ctx.loop?.endReason === 'interrupted' || ctx.loop?.endReason === 'cancelled';
}
