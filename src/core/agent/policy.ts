import type { ChatMessage } from '../model/types';
import type { ParsedTurn } from '../actions/types';
import type { CandidateRecord, PromptTokensRecord, VerifierDecisionRecord } from '../trajectory/schema';
import type { Task } from '../tasks/model';

export interface PolicyContext {
  task: Task;
  /** System prompt, instruction and the observation history so far. */
  messages: ChatMessage[];
  step: number;
  signal?: AbortSignal;
}

/** One turn proposed by a policy: N candidates and the one to execute. */
export interface PolicyTurn {
  candidates: CandidateRecord[];
  /**
   * Each candidate's parse, index-aligned with `candidates`, when the policy parsed them (the model
   * policy does, to know which parse and to let the verifier compare actions): the loop executes
   * the chosen one's instead of parsing its text again. Not written to the trajectory.
   */
  parsed?: ParsedTurn[];
  chosen: number;
  decision?: VerifierDecisionRecord;
  usage: { promptTokens: number; completionTokens: number; latencyMs?: number };
  elided?: number[];
  /** The prompt's token ids (delta from the previous turn), when the server returned them. */
  prompt?: PromptTokensRecord;
  /** USD spent on this turn's model calls, when the model has a price. */
  costUsd?: number;
}

/** Model, model + Mid-Harness verifier, oracle (reference solution), scripted (tests), human. */
export interface Policy {
  readonly kind: 'model' | 'oracle' | 'scripted' | 'human';
  readonly description: string;
  next(context: PolicyContext): Promise<PolicyTurn>;
}
