import type { ChatMessage, ModelConfig } from '../model/types';
import type { VerifierMode } from './modes';
import type { ParsedTurn } from '../actions/types';

/** The modes are registered in modes/index.ts; the list and the type come from there. */
export { VERIFIER_MODES, type VerifierMode } from './modes';

export interface VerifierConfig {
  mode: VerifierMode;
  /** The verifier's own endpoint; may be the generator's server with another model or the same one. */
  endpoint: ModelConfig;
  /**
   * Per-run budget of verifier tokens (prompt + completion, as the server reports them). Before
   * each step the cost of the configured mode is estimated; when it no longer fits in what is left
   * the verifier steps down to cheaper modes (by each mode's `costRank`: pairwise → listwise →
   * decision-only) and then to the first parseable candidate, and records `degradedFrom`.
   */
  tokenBudget?: number;
  /** Parallel verifier calls (pairwise with N=8 is 28). */
  concurrency?: number;
  /** Output cap per call for the modes that reason before answering. */
  maxOutputTokens?: number;
  /** Characters of history shown to the verifier (newest kept). */
  historyChars?: number;
  promptVersion?: string;
}

export interface VerifierInput {
  /** The task statement. When absent the first user message is used. */
  instruction?: string;
  /** The generator's conversation (system prompt, instruction, turns, observations). */
  messages: ChatMessage[];
  /** Raw candidate turns, reasoning included; the verifier strips `<think>` itself. */
  candidates: string[];
  /** Each candidate's parse (index-aligned), as the policy made it; parsed here when absent. */
  parsed?: ParsedTurn[];
  /** Whether the previous turn failed; inferred from its observation when absent. */
  lastTurnFailed?: boolean;
  signal?: AbortSignal;
}

/** Running totals over a run, for the footer and the budget. */
export interface VerifierRunStats {
  steps: number;
  calls: number;
  failedCalls: number;
  promptTokens: number;
  outputTokens: number;
  parallelOutputTokens: number;
  fallbacks: number;
  degradedSteps: number;
}
