import type { ChatMessage } from '../../model/types';

/** One verifier call a mode plans; `candidate` and `pair` tell its `interpret` what the call judged. */
export interface VerifierCall {
  messages: ChatMessage[];
  maxTokens: number;
  /** The candidate a per-candidate call scores (pointwise). */
  candidate?: number;
  /** The two candidates a pairwise call compares, and which of them was shown as A. */
  pair?: { i: number; j: number; aIs: 'i' | 'j' };
}

export interface PlanInput {
  /** Indices (into `texts`) of the candidates worth comparing, in sampling order. */
  viable: number[];
  /** Every candidate's raw text, reasoning included (the renderers strip it). */
  texts: string[];
  /** Labels shown for the viable candidates: labels[k] names viable[k]. */
  labels: string[];
  instruction: string;
  history: string;
  /** Output cap for modes that reason before answering. */
  maxOutputTokens: number;
  /** This mode's prompt file rendered with the configured prompt version. */
  prompt: (vars: Record<string, string>) => ChatMessage[];
}

export interface InterpretInput {
  calls: VerifierCall[];
  /** answers[k] is the text of calls[k]; undefined when that call failed. */
  answers: Array<string | undefined>;
  viable: number[];
  labels: string[];
  /** Candidates sampled in total (pairwise's matrix is n × n). */
  n: number;
  /** The failure to return when no answer is usable; names the endpoint's error when every call failed. */
  failure: (what: string) => { failure: string };
}

/** Scores in [0, 1] for the viable candidates (higher is better), or why the answers could not be read. */
export type Verdict = { scores: Map<number, number>; matrix?: number[][] } | { failure: string };

/**
 * A per-step verifier mode. Each lives in its own file in this folder and is listed once in
 * `index.ts`; everything else (CLI help, settings, the trajectory schema, the budget's step-down
 * chain) is derived from that list.
 */
export interface VerifierModeDefinition<Id extends string = string> {
  readonly id: Id;
  /** Other spellings `--verifier` accepts. */
  readonly aliases?: readonly string[];
  /** Position by cost per step, 0 = cheapest; the token budget steps down to lower ranks. */
  readonly costRank: number;
  /** Whether the token budget may step down to this mode when a costlier one does not fit. */
  readonly stepDownTarget: boolean;
  /** Prompt file stem: src/core/prompts/verifier-<prompt>-<version>.md. */
  readonly prompt: string;
  plan(input: PlanInput): VerifierCall[];
  /** Whether an answer holds what `interpret` reads; an unusable answer is asked for again once. */
  usable(text: string, labels: string[]): boolean;
  interpret(input: InterpretInput): Verdict;
}

/** The end of an answer, quoted in fallback records so a reader sees what the verifier said. */
export function snippet(text: string | undefined): string {
  if (text === undefined) return 'no answer';
  const t = text.trim().replace(/\s+/g, ' ');
  return JSON.stringify(t.length > 80 ? `…${t.slice(-80)}` : t);
}
