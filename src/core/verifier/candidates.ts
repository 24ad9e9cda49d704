import type { ChatMessage } from '../model/types';

/**
 * The verifier judges actions, never the reasoning behind them (a persuasive rationale must not
 * sell a bad command). Closed `<think>` blocks are removed; an unclosed `<think>` hides the rest.
 */
export function stripThink(text: string): string {
  const closed = text.replace(/<(think|thinking|reasoning)>[\s\S]*?<\/\1>/gi, '');
  const open = closed.search(/<(think|thinking|reasoning)>/i);
  return (open >= 0 ? closed.slice(0, open) : closed).trim();
}

/** Whitespace-insensitive identity of what a candidate would execute. */
export function actionKey(text: string): string {
  return stripThink(text).replace(/\s+/g, ' ').trim();
}

export type DemotionReason = 'does-not-parse' | 'repeats-failed-action';

export interface Prefiltered {
  /** Candidates worth a verifier call: parseable, not a failed repeat, first of their duplicates. */
  viable: number[];
  /** duplicateOf[i] = the earlier identical candidate whose verdict i shares. */
  duplicateOf: Map<number, number>;
  /** Ranked last without any call. */
  demoted: Map<number, DemotionReason>;
}

export function prefilter(candidates: string[], parses: boolean[], lastTurn: { text: string; failed: boolean } | undefined, keyOf: (text: string) => string = actionKey): Prefiltered {
  const viable: number[] = [];
  const duplicateOf = new Map<number, number>();
  const demoted = new Map<number, DemotionReason>();
  const firstByKey = new Map<string, number>();
  const failedKey = lastTurn?.failed ? keyOf(lastTurn.text) : undefined;
  candidates.forEach((text, i) => {
    const key = keyOf(text);
    if (!parses[i]) demoted.set(i, 'does-not-parse');
    else if (failedKey !== undefined && key === failedKey) demoted.set(i, 'repeats-failed-action');
    if (demoted.has(i)) return;
    const first = firstByKey.get(key);
    if (first !== undefined) {
      duplicateOf.set(i, first);
      return;
    }
    firstByKey.set(key, i);
    viable.push(i);
  });
  return { viable, duplicateOf, demoted };
}

/**
 * Signs that an observation reports a failure: a parse/handler `<error>`, a non-zero exit code, a
 * timeout. A heuristic on purpose — the step loop may pass the exact answer as `lastTurnFailed`.
 */
export function observationFailed(observation: string): boolean {
  return /<error>/i.test(observation)
    || /exit(?:[ _]?code|[ _]?status)?["']?\s*[:=]?\s*["']?(?:-?[1-9]\d*)\b/i.test(observation)
    || /\btimed out\b/i.test(observation);
}

/** The previous turn and whether it failed: the last assistant message and the observation after it. */
export function lastTurnOf(messages: ChatMessage[], failedOverride?: boolean): { text: string; failed: boolean } | undefined {
  let a = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'assistant') { a = i; break; }
  }
  if (a < 0) return undefined;
  const obs = messages.slice(a + 1).filter((m) => m.role === 'user').map((m) => m.content).join('\n');
  return { text: messages[a].content, failed: failedOverride ?? observationFailed(obs) };
}
