import { jsonField, lastMatch, strip } from '../answers';
import { renderOne } from '../render';
import { snippet, type VerifierModeDefinition } from './mode';

/** A score in [0, 10]. */
export function parseScore(text: string): number | undefined {
  const t = strip(text);
  const m = lastMatch(t, /score\s*[:=]\s*(-?\d+(?:\.\d+)?)/i);
  let v = m ? Number(m[1]) : undefined;
  if (v === undefined) {
    const j = jsonField(t, 'score');
    if (typeof j === 'number' || (typeof j === 'string' && j.trim() !== '')) v = Number(j);
  }
  if (v === undefined || !Number.isFinite(v)) return undefined;
  return Math.min(10, Math.max(0, v));
}

export const pointwise: VerifierModeDefinition<'pointwise'> = {
  id: 'pointwise',
  costRank: 2,
  // K calls that each repeat the history: a budget that cannot afford pairwise rarely affords
  // this, so the step-down goes straight to the one-call modes.
  stepDownTarget: false,
  prompt: 'pointwise',
  plan: ({ viable, texts, instruction, history, maxOutputTokens, prompt }) =>
    viable.map((i) => ({ maxTokens: maxOutputTokens, candidate: i, messages: prompt({ instruction, history, candidate: renderOne(texts[i]) }) })),
  usable: (text) => parseScore(text) !== undefined,
  interpret({ calls, answers, viable, failure }) {
    const scores = new Map<number, number>();
    calls.forEach((c, k) => {
      const s = answers[k] !== undefined ? parseScore(answers[k]) : undefined;
      if (s !== undefined) scores.set(c.candidate!, s / 10);
    });
    if (scores.size === 0) return failure(`no pointwise answer had a usable SCORE line (${snippet(answers[0])})`);
    // An unscored candidate must not beat a scored one: it gets the floor of the scale.
    for (const i of viable) if (!scores.has(i)) scores.set(i, 0);
    return { scores };
  },
};
