import { TbrlError, errorMessage } from '../errors';
import type { AgentState, ParsedTurn } from '../actions/types';
import type { ChatMessage } from '../model/types';
import type { Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import { stepObservation } from '../trajectory/observation';
import { checkpointShellState } from '../trajectory/checkpoint-state';
import type { StepRecord, TrajectoryFooter } from '../trajectory/schema';
import type { Policy, PolicyTurn } from './policy';
import { initialMessages } from './prompt';
import { parseAgentTurn, runAgentTurn } from './turn';

export interface LoopLimits {
  maxSteps: number;
  /** Wall time of the whole loop; checked before each step and bounds each policy call. */
  maxTimeMs?: number;
  /** Policy tokens (prompt + completion, summed over steps): what a run costs. */
  maxTokens?: number;
}

/** What the debugger sees before a turn runs. */
export interface PendingTurn {
  step: number;
  text: string;
  parsed: ParsedTurn;
  policyTurn: PolicyTurn;
}

export type BeforeExecuteDecision = { action: 'continue' } | { action: 'replace'; text: string } | { action: 'stop' };

export type LoopEvent =
  | { type: 'step-start'; step: number }
  | { type: 'policy-done'; step: number; turn: PolicyTurn; ms: number }
  | { type: 'step-done'; step: StepRecord };

export interface LoopOptions {
  policy: Policy;
  sandbox: Sandbox;
  task: Task;
  systemPrompt: string;
  limits: LoopLimits;
  /** Trace commands for DepGPO (ignored by the sandbox when tracing is unavailable). */
  trace?: boolean;
  maxObservationBytes?: number;
  defaultTimeoutMs?: number;
  /** Commit the container after every step (fork / step back in the debugger). */
  checkpoint?: boolean;
  /**
   * Called after the policy chose a turn and before any of it runs. The debugger pauses here; it
   * may let the turn run, replace its text (an edited action), or stop the run.
   */
  beforeExecute?: (step: number, turn: PendingTurn) => Promise<BeforeExecuteDecision>;
  /** Every completed step, before the next one starts (write it to the trajectory here). */
  onStep?: (step: StepRecord) => void | Promise<void>;
  onEvent?: (event: LoopEvent) => void;
  /** Abort ends the run as 'cancelled' (or 'interrupted' when the abort reason is the string 'interrupted'). */
  signal?: AbortSignal;
  /** Sequential Refine: a summary of the previous attempt, shown with the task. */
  previousAttempt?: string;
  /** Resume from a checkpoint: the conversation, state and step number to continue from. */
  resume?: { messages: ChatMessage[]; state: AgentState; nextStep: number };
}

export interface LoopResult {
  endReason: TrajectoryFooter['endReason'];
  endMessage?: string;
  steps: StepRecord[];
  usage: { promptTokens: number; completionTokens: number };
  state: AgentState;
  messages: ChatMessage[];
  durationMs: number;
}

/** Turns in a row that may only produce errors before the episode ends. */
export const MAX_CONSECUTIVE_ERROR_TURNS = 3;
export const DEFAULT_MAX_OBSERVATION_BYTES = 16 * 1024;

export async function runAgentLoop(options: LoopOptions): Promise<LoopResult> {
  const started = Date.now();
  const deadline = options.limits.maxTimeMs !== undefined ? started + options.limits.maxTimeMs : undefined;
  const messages: ChatMessage[] = options.resume ? [...options.resume.messages] : initialMessages(options.systemPrompt, options.task, options.previousAttempt);
  const state: AgentState = options.resume ? structuredClone(options.resume.state) : { todos: [], nextTodoId: 1, scratchpad: [] };
  const steps: StepRecord[] = [];
  const usage = { promptTokens: 0, completionTokens: 0 };
  let errorTurns = 0;
  let step = options.resume?.nextStep ?? 0;

  const done = (endReason: LoopResult['endReason'], endMessage?: string): LoopResult => ({
    endReason,
    endMessage,
    steps,
    usage,
    state,
    messages,
    durationMs: Date.now() - started,
  });
  const aborted = (): LoopResult => {
    const reason = options.signal?.reason === 'interrupted' ? 'interrupted' : 'cancelled';
    return done(reason, `The run was ${reason} before step ${step}.`);
  };

  for (;;) {
    if (options.signal?.aborted) return aborted();
    if (steps.length >= options.limits.maxSteps) return done('max-steps', `Reached the step limit (${options.limits.maxSteps}).`);
    if (deadline !== undefined && Date.now() >= deadline) return done('max-time', `Reached the time limit (${Math.round(options.limits.maxTimeMs! / 1000)} s).`);
    if (options.limits.maxTokens !== undefined && usage.promptTokens + usage.completionTokens >= options.limits.maxTokens) {
      return done('max-tokens', `Reached the token limit (${options.limits.maxTokens}; used ${usage.promptTokens + usage.completionTokens}).`);
    }

    options.onEvent?.({ type: 'step-start', step });
    const stepStarted = Date.now();
    const startedAt = new Date(stepStarted).toISOString();

    const policySignal = combineSignals(options.signal, deadline);
    let turn: PolicyTurn;
    try {
      turn = await options.policy.next({ task: options.task, messages: [...messages], step, signal: policySignal.signal });
    } catch (err) {
      if (options.signal?.aborted) return aborted();
      if (policySignal.timedOut()) return done('max-time', `Reached the time limit (${Math.round(options.limits.maxTimeMs! / 1000)} s) while the policy was answering.`);
      throw err;
    } finally {
      policySignal.dispose();
    }
    usage.promptTokens += turn.usage.promptTokens;
    usage.completionTokens += turn.usage.completionTokens;
    options.onEvent?.({ type: 'policy-done', step, turn, ms: Date.now() - stepStarted });

    const chosen = turn.candidates[turn.chosen];
    if (!chosen) throw new TbrlError('policy-bad-turn', `The ${options.policy.kind} policy chose candidate ${turn.chosen} of ${turn.candidates.length} at step ${step}.`, 'This is a bug in the policy; report it with the trajectory.');
    let text = chosen.text;
    let parsed = turn.parsed?.[turn.chosen] ?? parseAgentTurn(text);
    let human: StepRecord['human'];

    if (options.beforeExecute) {
      const decision = await options.beforeExecute(step, { step, text, parsed, policyTurn: turn });
      if (decision.action === 'stop') return done('cancelled', `Stopped before step ${step} ran.`);
      if (decision.action === 'replace' && decision.text !== text) {
        human = { action: 'edit', chosen: turn.chosen, editedFrom: text };
        text = decision.text;
        // Picking another candidate reuses its parse; only a hand-edited text is parsed here.
        const picked = turn.candidates.findIndex((c) => c.text === text);
        parsed = (picked >= 0 ? turn.parsed?.[picked] : undefined) ?? parseAgentTurn(text);
      }
    }

    // A command without its own timeout may not outlive the run's deadline.
    const remainingMs = deadline !== undefined ? Math.max(1000, deadline - Date.now()) : Infinity;
    const executed = await unlessAborted(runAgentTurn(parsed, {
      sandbox: options.sandbox,
      state,
      trace: options.trace ?? true,
      maxObservationBytes: options.maxObservationBytes ?? DEFAULT_MAX_OBSERVATION_BYTES,
      defaultTimeoutMs: Math.min(options.defaultTimeoutMs ?? Math.max(1000, options.task.agentTimeoutSec * 1000), remainingMs),
    }), options.signal);
    // Aborted mid-step: the step did not complete, so it is not recorded; closing the sandbox ends its command.
    if (!executed) return aborted();

    const record: StepRecord = {
      type: 'step',
      index: step,
      startedAt,
      durationMs: 0,
      candidates: turn.candidates,
      ...(turn.decision ? { decision: turn.decision } : {}),
      chosenText: text,
      actions: executed.actions,
      parseErrors: executed.parseErrors,
      usage: { ...turn.usage },
      todos: state.todos.map((t) => ({ ...t })),
      scratchpad: [...state.scratchpad],
      ...(human ? { human } : {}),
      ...(turn.elided && turn.elided.length > 0 ? { elided: turn.elided } : {}),
      ...(turn.prompt ? { prompt: turn.prompt } : {}),
      ...(turn.costUsd !== undefined ? { costUsd: turn.costUsd } : {}),
    };
    if (options.checkpoint) {
      try {
        const cp = await options.sandbox.checkpoint(step);
        record.checkpoint = cp.imageId;
        record.checkpointState = checkpointShellState(cp.cwd, cp.env);
      } catch (err) {
        // A failed commit must not lose the step; the debugger just cannot fork from here.
        record.checkpointError = errorMessage(err);
      }
    }
    record.durationMs = Date.now() - stepStarted;
    steps.push(record);
    messages.push({ role: 'assistant', content: text });
    // Every turn has an observation: a turn without actions gets the no-action error (parseAgentTurn).
    messages.push({ role: 'user', content: stepObservation(record) });
    await options.onStep?.(record);
    options.onEvent?.({ type: 'step-done', step: record });
    step++;

    if (executed.endsEpisode) return done('finished', executed.finishMessage);
    errorTurns = executed.onlyErrors ? errorTurns + 1 : 0;
    if (errorTurns >= MAX_CONSECUTIVE_ERROR_TURNS) {
      return done('repeated-errors', `${MAX_CONSECUTIVE_ERROR_TURNS} consecutive turns produced only errors.`);
    }
  }
}

/** Resolves with the turn, or with undefined as soon as the signal aborts (the turn's promise is left to settle on its own). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => {
      work.catch(() => undefined);
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** One signal that fires on the caller's abort or at the deadline, whichever comes first. */
function combineSignals(outer: AbortSignal | undefined, deadline: number | undefined): { signal: AbortSignal | undefined; timedOut: () => boolean; dispose: () => void } {
  if (deadline === undefined) return { signal: outer, timedOut: () => false, dispose: () => {} };
  const controller = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort('max-time');
  }, Math.max(0, deadline - Date.now()));
  const onAbort = (): void => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => fired,
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}
