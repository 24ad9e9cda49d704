import { VERSION } from '../version';
import { stepObservation } from './observation';
import type { Trajectory } from './reader';
import { promptTokenIds } from './tokens';

/**
 * Two interchange shapes for a finished (or interrupted) run:
 * - rLLM/verl episode JSON: what an rLLM workflow returns (Episode → Trajectory → Step), so a
 *   trainer can load our rollouts without running them again. Reward sits on the last step
 *   (sparse), per-step DepGPO advantages on every step when the run has them.
 * - Harbor's ATIF (Agent Trajectory Interchange Format, v1.7) where fields map: system and user
 *   steps for the prompt, one agent step per turn with tool_calls ↔ observation.results, and per
 *   turn the exact prompt and completion token ids, per-token logprobs and cost when the run has
 *   them (metrics.prompt_token_ids / completion_token_ids / logprobs / cost_usd). A policy that
 *   calls no model (the oracle) gives llm_call_count 0 and no metrics, as v1.7 requires.
 */

export interface ChatTurn { role: 'system' | 'user' | 'assistant'; content: string }

export interface EpisodeStep {
  /** The messages the policy saw before this turn (system + instruction + earlier turns). */
  chat_completions: ChatTurn[];
  /** The observation the turn answered (the instruction for step 0). */
  observation: string;
  /** The executed turn. */
  action: string;
  model_response: string;
  reward: number;
  done: boolean;
  advantage?: number;
  info: Record<string, unknown>;
}

export interface Episode {
  id: string;
  task: { id: string; instruction: string; dir: string };
  termination_reason: string;
  is_correct: boolean;
  /** The prompt: system message and instruction. */
  prompt: ChatTurn[];
  /** The whole conversation, ending with the last observation. */
  messages: ChatTurn[];
  trajectories: Array<{ name: string; reward: number; steps: EpisodeStep[] }>;
  metrics: Record<string, number>;
  info: Record<string, unknown>;
}

function promptOf(t: Trajectory): ChatTurn[] {
  const prompt: ChatTurn[] = [];
  if (t.header.systemPrompt) prompt.push({ role: 'system', content: t.header.systemPrompt });
  prompt.push({ role: 'user', content: t.header.task.instruction });
  return prompt;
}

export function toEpisode(t: Trajectory): Episode {
  const prompt = promptOf(t);
  const messages: ChatTurn[] = [...prompt];
  const total = t.footer?.reward?.total ?? 0;
  const advantages = t.footer?.depgpo?.advantages;
  const factors = t.footer?.depgpo?.factors;
  const steps: EpisodeStep[] = t.steps.map((s, i) => {
    const before = messages.slice();
    const observation = i === 0 ? t.header.task.instruction : stepObservation(t.steps[i - 1]);
    messages.push({ role: 'assistant', content: s.chosenText });
    messages.push({ role: 'user', content: stepObservation(s) });
    const last = i === t.steps.length - 1;
    const step: EpisodeStep = {
      chat_completions: before,
      observation,
      action: s.chosenText,
      model_response: s.chosenText,
      reward: last ? total : 0,
      done: last && t.footer !== undefined,
      info: {
        index: s.index,
        actions: s.actions.map((a) => ({ kind: a.kind, ok: a.ok, exitCode: a.exitCode })),
        parseErrors: s.parseErrors.length,
        candidates: s.candidates.length,
        usage: s.usage,
        ...(factors?.[i] !== undefined ? { depgpoFactor: factors[i] } : {}),
      },
    };
    if (advantages?.[i] !== undefined) step.advantage = advantages[i];
    return step;
  });
  const usage = t.footer?.usage;
  return {
    id: t.header.runId,
    task: { id: t.header.task.id, instruction: t.header.task.instruction, dir: t.header.task.dir },
    termination_reason: t.footer?.endReason ?? 'interrupted',
    is_correct: total >= 1,
    prompt,
    messages,
    trajectories: [{ name: 'agent', reward: total, steps }],
    metrics: {
      steps: t.steps.length,
      reward: total,
      ...(t.footer?.reward?.tests !== undefined ? { tests: t.footer.reward.tests } : {}),
      prompt_tokens: usage?.promptTokens ?? sum(t, (s) => s.usage.promptTokens),
      completion_tokens: usage?.completionTokens ?? sum(t, (s) => s.usage.completionTokens),
    },
    info: { policy: t.header.policy, schema: t.header.schema, truncated: t.truncated },
  };
}

function sum(t: Trajectory, f: (s: Trajectory['steps'][number]) => number): number {
  return t.steps.reduce((acc, s) => acc + f(s), 0);
}

export interface AtifStep {
  step_id: number;
  timestamp?: string;
  source: 'system' | 'user' | 'agent';
  model_name?: string;
  message: string;
  tool_calls?: Array<{ tool_call_id: string; function_name: string; arguments: Record<string, unknown> }>;
  observation?: { results: Array<{ source_call_id?: string; content?: string }> };
  metrics?: {
    prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number; cost_usd?: number;
    prompt_token_ids?: number[]; completion_token_ids?: number[]; logprobs?: number[];
    extra?: Record<string, unknown>;
  };
  llm_call_count?: number;
  extra?: Record<string, unknown>;
}

export interface AtifTrajectory {
  schema_version: 'ATIF-v1.7';
  session_id: string;
  agent: { name: string; version: string; model_name?: string; extra?: Record<string, unknown> };
  steps: AtifStep[];
  notes?: string;
  final_metrics?: { total_prompt_tokens?: number; total_completion_tokens?: number; total_cost_usd?: number; total_steps?: number; extra?: Record<string, unknown> };
  extra?: Record<string, unknown>;
}

export function toAtif(t: Trajectory): AtifTrajectory {
  const steps: AtifStep[] = [];
  const model = t.header.policy.model;
  if (t.header.systemPrompt) steps.push({ step_id: steps.length + 1, timestamp: t.header.startedAt, source: 'system', message: t.header.systemPrompt });
  steps.push({ step_id: steps.length + 1, timestamp: t.header.startedAt, source: 'user', message: t.header.task.instruction });
  const usesModel = t.header.policy.kind === 'model';
  // Rebuilt from the per-step deltas; a damaged chain exports without ids rather than wrong ones.
  let prompts: Array<number[] | undefined> = [];
  try {
    prompts = promptTokenIds(t.steps);
  } catch {
    prompts = [];
  }
  t.steps.forEach((s, k) => {
    const calls = s.actions.map((a, i) => ({ tool_call_id: `call_${s.index}_${i}`, function_name: a.kind, arguments: a.input }));
    const results: Array<{ source_call_id?: string; content?: string }> = s.actions.map((a, i) => ({ source_call_id: calls[i].tool_call_id, content: a.observation }));
    // Parse errors have no tool call behind them; ATIF allows results without source_call_id for exactly that.
    for (const e of s.parseErrors) results.push({ content: e });
    const chosen = s.candidates[s.decision?.chosen ?? 0];
    // A human edit replaced the sampled text: its tokens were never sampled, so none are exported.
    const sampled = chosen && !s.human?.editedFrom ? chosen : undefined;
    const promptIds = prompts[k];
    steps.push({
      step_id: steps.length + 1,
      timestamp: s.startedAt,
      source: 'agent',
      ...(model && usesModel ? { model_name: model } : {}),
      message: s.chosenText,
      ...(calls.length ? { tool_calls: calls } : {}),
      observation: { results },
      llm_call_count: usesModel ? 1 + (s.decision?.calls ?? 0) : 0,
      ...(usesModel ? {
        metrics: {
          prompt_tokens: s.usage.promptTokens,
          completion_tokens: s.usage.completionTokens,
          ...(s.costUsd !== undefined ? { cost_usd: s.costUsd } : {}),
          ...(promptIds ? { prompt_token_ids: promptIds } : {}),
          ...(sampled?.tokenIds ? { completion_token_ids: sampled.tokenIds } : {}),
          ...(sampled?.logprobs ? { logprobs: sampled.logprobs } : {}),
          extra: {
            ...(s.usage.latencyMs !== undefined ? { latency_ms: s.usage.latencyMs } : {}),
            ...(sampled?.logprobSum !== undefined ? { logprob_sum: sampled.logprobSum } : {}),
            ...(sampled?.finishReason ? { finish_reason: sampled.finishReason } : {}),
            ...(s.elided?.length ? { elided_messages: s.elided } : {}),
          },
        },
      } : {}),
      extra: {
        tbrl_step: s.index,
        duration_ms: s.durationMs,
        candidates: s.candidates.length,
        ...(s.decision ? { verifier: { mode: s.decision.mode, chosen: s.decision.chosen, scores: s.decision.scores } } : {}),
        exit_codes: s.actions.map((a) => a.exitCode ?? null),
        ...(t.footer?.depgpo?.factors[s.index] !== undefined ? { depgpo_factor: t.footer.depgpo.factors[s.index] } : {}),
        ...(t.footer?.depgpo?.advantages?.[s.index] !== undefined ? { advantage: t.footer.depgpo.advantages[s.index] } : {}),
      },
    });
  });
  const costs = t.steps.filter((s) => s.costUsd !== undefined);
  const usage = t.footer?.usage;
  return {
    schema_version: 'ATIF-v1.7',
    session_id: t.header.runId,
    agent: { name: 'tbrl', version: t.header.versions.tbrl || VERSION, ...(model ? { model_name: model } : {}), extra: { policy: t.header.policy.kind, prompt_version: t.header.versions.promptVersion } },
    steps,
    notes: 'Exported from a tbrl trajectory.jsonl; tool_calls are the parsed actions of each turn (function_name = action kind), observation results without source_call_id are parse errors.',
    final_metrics: {
      total_prompt_tokens: usage?.promptTokens ?? sum(t, (s) => s.usage.promptTokens),
      total_completion_tokens: usage?.completionTokens ?? sum(t, (s) => s.usage.completionTokens),
      ...(costs.length ? { total_cost_usd: costs.reduce((a, s) => a + s.costUsd!, 0) } : {}),
      total_steps: steps.length,
      extra: { reward: t.footer?.reward ?? null, end_reason: t.footer?.endReason ?? 'interrupted', agent_turns: t.steps.length },
    },
    extra: { task_id: t.header.task.id, tbrl_schema: t.header.schema },
  };
}
