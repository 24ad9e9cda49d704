import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import { loadTask } from '../tasks/load';
import type { Task } from '../tasks/model';
import type { Sandbox, SandboxProvider } from '../sandbox/types';
import { DockerSandboxProvider } from '../sandbox/provider';
import { createTracedSandbox } from '../trace/traced-sandbox';
import { parseAgentTurn, runAgentTurn } from '../agent/turn';
import { MAX_CONSECUTIVE_ERROR_TURNS, DEFAULT_MAX_OBSERVATION_BYTES } from '../agent/loop';
import { initialMessages, loadSystemPrompt } from '../agent/prompt';
import type { AgentState } from '../actions/types';
import type { ChatMessage } from '../model/types';
import { stepObservation } from '../trajectory/observation';
import { TRAJECTORY_SCHEMA } from '../trajectory/schema';
import type { RewardRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import type { VerifierTrace } from '../trace/types';
import { computeReward } from '../reward/index';
import { createProgressRecorder } from '../synth/progress';
import { computeDepgpo } from '../depgpo/compute';
import { depgpoInput } from '../depgpo/trajectory';
import { stepAdvantages } from '../depgpo/factors';
import { VERSION } from '../version';

/**
 * One episode of a task, driven one agent turn at a time from outside (the trainer's rollout loop):
 * the same task loading, sandbox, action parser/executors, reward and DepGPO as `tbrl run`, minus
 * the policy, which lives on the other side of the env-server.
 */
export interface ResetParams {
  /** Task directory (Terminal-Bench task.yaml or Harbor task.toml). */
  task: string;
  maxSteps?: number;
  /** Trace commands for DepGPO (default on; falls back when tracing is unavailable). */
  trace?: boolean;
  /** Skip the tests at the end (exploration only; reward 0). */
  skipReward?: boolean;
}

export interface StepParams {
  /** The agent's turn, verbatim (XML-tagged actions with YAML bodies). */
  action: string;
  /** Completion tokens of this turn: DepGPO's token weights (default: estimated from the text). */
  tokens?: number;
}

export interface StepAnswer {
  observation: string;
  reward: number;
  done: boolean;
  info: {
    step: number;
    actions: Array<{ kind: string; ok: boolean; exitCode?: number | null }>;
    parseErrors: number;
    endReason?: TrajectoryFooter['endReason'];
    endMessage?: string;
    rewardRecord?: RewardRecord;
  };
}

export class EpisodeEnvironment {
  private task?: Task;
  private sandbox?: Sandbox;
  private header?: TrajectoryHeader;
  private steps: StepRecord[] = [];
  private state: AgentState = { todos: [], nextTodoId: 1, scratchpad: [] };
  private errorTurns = 0;
  private maxSteps = 50;
  private trace = true;
  private skipReward = false;
  private finished?: { endReason: TrajectoryFooter['endReason']; endMessage?: string; reward?: RewardRecord; verifierTrace?: VerifierTrace };

  constructor(private readonly provider: SandboxProvider = new DockerSandboxProvider(), private readonly log: (line: string) => void = () => {}) {}

  async reset(params: ResetParams): Promise<{ observation: string; messages: ChatMessage[]; info: Record<string, unknown> }> {
    if (typeof params?.task !== 'string' || !params.task) {
      throw new TbrlError('env-bad-params', 'reset needs "task": the path of a task directory.', 'Call reset with {"task": "/path/to/task-dir"}.');
    }
    await this.close();
    const task = await loadTask(resolve(params.task));
    this.maxSteps = positiveInt(params.maxSteps, 50, 'maxSteps');
    this.trace = params.trace !== false;
    this.skipReward = params.skipReward === true;
    const runId = `env-${task.id.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 40)}-${randomBytes(3).toString('hex')}`;
    const inner = await this.provider.create({
      image: 'image' in task.environment ? { kind: 'image', image: task.environment.image } : { kind: 'dockerfile', context: task.environment.context, dockerfile: task.environment.dockerfile },
      runId,
      network: task.allowInternet,
      onProgress: (line) => this.log(`build: ${line}`),
    });
    let sandbox: Sandbox = inner;
    try {
      sandbox = await createTracedSandbox(inner, { enabled: this.trace });
    } catch (err) {
      this.log(`tracing could not be set up: ${errorMessage(err)}`);
    }
    const prompt = loadSystemPrompt();
    const info = sandbox.info;
    this.task = task;
    this.sandbox = sandbox;
    this.steps = [];
    this.state = { todos: [], nextTodoId: 1, scratchpad: [] };
    this.errorTurns = 0;
    this.finished = undefined;
    this.header = {
      type: 'header',
      schema: TRAJECTORY_SCHEMA,
      runId,
      startedAt: new Date().toISOString(),
      task: { id: task.id, dir: task.dir, format: task.format, instruction: task.instruction },
      policy: { kind: 'model', model: 'external (env-server)' },
      config: { envServer: true, trace: this.trace },
      versions: { tbrl: VERSION, node: process.version, promptVersion: prompt.version },
      sandbox: { image: info.image, ...(info.substitutedFrom ? { substitutedFrom: info.substitutedFrom } : {}), tracing: info.tracing, ...(info.cage ? { cage: info.cage } : {}) },
      systemPrompt: prompt.text,
      limits: { maxSteps: this.maxSteps },
    };
    const messages = initialMessages(prompt.text, task);
    return {
      observation: messages[messages.length - 1].content,
      messages,
      info: { runId, taskId: task.id, image: info.image, tracing: info.tracing, maxSteps: this.maxSteps },
    };
  }

  async step(params: StepParams): Promise<StepAnswer> {
    if (!this.sandbox || !this.task || !this.header) throw new TbrlError('env-no-episode', 'step before reset: there is no episode.', 'Call reset {"task": "<dir>"} first.');
    if (this.finished) throw new TbrlError('env-episode-done', `The episode has ended (${this.finished.endReason}).`, 'Call reset to start a new episode.');
    if (typeof params?.action !== 'string') throw new TbrlError('env-bad-params', 'step needs "action": the agent\'s turn as text.', 'Call step with {"action": "<bash>\\ncmd: ls\\n</bash>"}.');
    const index = this.steps.length;
    const started = Date.now();
    const parsed = parseAgentTurn(params.action);
    const executed = await runAgentTurn(parsed, {
      sandbox: this.sandbox,
      state: this.state,
      trace: this.trace,
      maxObservationBytes: DEFAULT_MAX_OBSERVATION_BYTES,
      defaultTimeoutMs: Math.max(1000, this.task.agentTimeoutSec * 1000),
    });
    const tokens = typeof params.tokens === 'number' && params.tokens > 0 ? Math.round(params.tokens) : Math.max(1, Math.round(params.action.length / 4));
    const record: StepRecord = {
      type: 'step',
      index,
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      candidates: [{ text: params.action, completionTokens: tokens, parses: executed.parseErrors.length === 0 }],
      chosenText: params.action,
      actions: executed.actions,
      parseErrors: executed.parseErrors,
      usage: { promptTokens: 0, completionTokens: tokens },
      todos: this.state.todos.map((t) => ({ ...t })),
      scratchpad: [...this.state.scratchpad],
    };
    this.steps.push(record);
    this.errorTurns = executed.actions.some((a) => a.ok) ? 0 : this.errorTurns + 1;

    let end: { endReason: TrajectoryFooter['endReason']; endMessage?: string } | undefined;
    if (executed.endsEpisode) end = { endReason: 'finished', ...(executed.finishMessage !== undefined ? { endMessage: executed.finishMessage } : {}) };
    else if (this.errorTurns >= MAX_CONSECUTIVE_ERROR_TURNS) end = { endReason: 'repeated-errors', endMessage: `${MAX_CONSECUTIVE_ERROR_TURNS} consecutive turns produced only errors.` };
    else if (this.steps.length >= this.maxSteps) end = { endReason: 'max-steps', endMessage: `Reached the step limit (${this.maxSteps}).` };

    const answer: StepAnswer = {
      observation: stepObservation(record),
      reward: 0,
      done: !!end,
      info: { step: index, actions: executed.actions.map((a) => ({ kind: a.kind, ok: a.ok, ...(a.exitCode !== undefined ? { exitCode: a.exitCode } : {}) })), parseErrors: executed.parseErrors.length },
    };
    if (end) {
      this.finished = { ...end };
      answer.info.endReason = end.endReason;
      if (end.endMessage !== undefined) answer.info.endMessage = end.endMessage;
      if (!this.skipReward) {
        const r = await this.score();
        this.finished.reward = r.reward;
        this.finished.verifierTrace = r.verifierTrace;
        answer.reward = r.reward.total;
        answer.info.rewardRecord = r.reward;
      }
    }
    return answer;
  }

  /**
   * Ends the episode now (the trainer's turn budget ran out before the agent finished) and scores it,
   * as Terminal-Bench scores a run that hit its limit. Idempotent: an ended episode keeps its reward.
   */
  async evaluate(params: { endReason?: string } = {}): Promise<{ reward: number; done: true; info: { endReason: TrajectoryFooter['endReason']; rewardRecord?: RewardRecord } }> {
    if (!this.sandbox || !this.task || !this.header) throw new TbrlError('env-no-episode', 'evaluate before reset: there is no episode.', 'Call reset {"task": "<dir>"} first.');
    if (!this.finished) {
      const allowed: TrajectoryFooter['endReason'][] = ['max-steps', 'max-time', 'max-tokens', 'cancelled'];
      const endReason = allowed.includes(params.endReason as TrajectoryFooter['endReason']) ? (params.endReason as TrajectoryFooter['endReason']) : 'max-steps';
      this.finished = { endReason, endMessage: 'Ended by the trainer (evaluate).' };
      if (!this.skipReward) {
        const r = await this.score();
        this.finished.reward = r.reward;
        this.finished.verifierTrace = r.verifierTrace;
      }
    }
    const rewardRecord = this.finished.reward;
    return { reward: rewardRecord?.total ?? 0, done: true, info: { endReason: this.finished.endReason, ...(rewardRecord ? { rewardRecord } : {}) } };
  }

  /**
   * The episode's reward as `tbrl run` computes it: weighted tests (and judge), and for Tev tasks
   * (a progress contract) PPRS, R = 1[pass] + λ·Φ(s_T), with Φ graded before the tests run.
   */
  private async score(): Promise<{ reward: RewardRecord; verifierTrace?: VerifierTrace }> {
    const progress = createProgressRecorder(this.sandbox!, this.task!, { onError: (m) => this.log(m) });
    await progress.finalPhi();
    const r = await computeReward({ task: this.task!, sandbox: this.sandbox!, trajectoryLines: [this.header!, ...this.steps] });
    return { reward: await progress.finish(r.reward), verifierTrace: r.verifierTrace };
  }

  /** DepGPO credit of the current (or just finished) episode: per-step scores, factors, Z, and Â_t when Â_i is given. */
  credit(params: { groupAdvantage?: number } = {}): Record<string, unknown> {
    if (!this.header) throw new TbrlError('env-no-episode', 'credit before reset: there is no episode.', 'Run an episode (reset, step...) first, or pass {"trajectory": ...} / {"input": ...}.');
    const input = { ...depgpoInput({ header: this.header, steps: this.steps }), ...(this.finished?.verifierTrace ? { verifier: this.finished.verifierTrace } : {}) };
    const result = computeDepgpo(input);
    return {
      stepScores: result.stepScores,
      factors: result.factors,
      z: result.z,
      stepTokens: input.stepTokens,
      ...(result.fallback ? { fallback: result.fallback } : {}),
      ...(typeof params.groupAdvantage === 'number' ? { advantages: stepAdvantages(result.factors, result.z, params.groupAdvantage) } : {}),
      resources: result.resources,
    };
  }

  /** Header + steps (+ footer when ended) as written to trajectory.jsonl. */
  trajectory(): Array<TrajectoryHeader | StepRecord | Partial<TrajectoryFooter>> {
    if (!this.header) return [];
    const lines: Array<TrajectoryHeader | StepRecord | Partial<TrajectoryFooter>> = [this.header, ...this.steps];
    if (this.finished) lines.push({ type: 'footer', endedAt: new Date().toISOString(), endReason: this.finished.endReason, steps: this.steps.length, ...(this.finished.reward ? { reward: this.finished.reward } : {}), ...(this.finished.verifierTrace ? { verifierTrace: this.finished.verifierTrace } : {}) });
    return lines;
  }

  async close(): Promise<boolean> {
    const had = !!this.sandbox;
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    if (sandbox) await sandbox.close();
    return had;
  }
}

function positiveInt(v: unknown, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new TbrlError('env-bad-params', `${name} must be a positive integer, got ${JSON.stringify(v)}.`, `e.g. {"${name}": ${dflt}}`);
  return v;
}
