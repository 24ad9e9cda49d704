import { jsonField, lastMatch, strip } from '../answers';
import { renderCandidates } from '../render';
import { snippet, type VerifierModeDefinition } from './mode';

/** Labels best first. Unmentioned labels are appended in their original order. */
export function parseRanking(text: string, labels: string[]): string[] | undefined {
  const t = strip(text);
  let listed: string[] = [];
  const line = lastMatch(t, /ranking\s*[:=]\s*([^\n]+)/i);
  if (line) listed = line[1].toUpperCase().match(/\b[A-Z]\b/g) ?? [];
  else {
    const j = jsonField(t, 'ranking');
    if (Array.isArray(j)) listed = j.map((x) => String(x).replace(/candidate\s*/i, '').trim().toUpperCase());
    else {
      const bare = lastMatch(t, /^\s*([A-Z](?:\s*[>,]\s*[A-Z])+)\s*$/m);
      if (bare) listed = bare[1].match(/[A-Z]/g) ?? [];
    }
  }
  const seen = new Set<string>();
  const ranked = listed.filter((l) => labels.includes(l) && !seen.has(l) && seen.add(l));
  if (ranked.length === 0) return undefined;
  return [...ranked, ...labels.filter((l) => !seen.has(l))];
}

export const listwise: VerifierModeDefinition<'listwise'> = {
  id: 'listwise',
  costRank: 1,
  stepDownTarget: true,
  prompt: 'listwise',
  plan: ({ viable, texts, labels, instruction, history, maxOutputTokens, prompt }) => [
    { maxTokens: maxOutputTokens, messages: prompt({ instruction, history, labels: labels.join(', '), candidates: renderCandidates(viable.map((i) => texts[i])) }) },
  ],
  usable: (text, labels) => parseRanking(text, labels) !== undefined,
  interpret({ answers, viable, labels, failure }) {
    const order = answers[0] !== undefined ? parseRanking(answers[0], labels) : undefined;
    if (!order) return failure(`listwise answer had no usable RANKING line (${snippet(answers[0])})`);
    const k = order.length;
    return { scores: new Map(order.map((l, r) => [viable[labels.indexOf(l)], k === 1 ? 1 : (k - 1 - r) / (k - 1)])) };
  },
};
