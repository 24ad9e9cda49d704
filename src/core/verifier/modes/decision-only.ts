import { lastMatch, strip } from '../answers';
import { renderCandidates } from '../render';
import { snippet, type VerifierModeDefinition } from './mode';

/** A letter and maybe a bracket: nothing else fits in the answer. */
const DECISION_TOKENS = 3;

/** One letter among `labels`. */
export function parseDecision(text: string, labels: string[]): string | undefined {
  const t = strip(text).trim();
  const bare = /^(?:candidate\s*)?([A-Z])\s*[).:]?$/i.exec(t) ?? /^([A-Z])[).:]\s/.exec(t);
  if (bare && labels.includes(bare[1].toUpperCase())) return bare[1].toUpperCase();
  const labelled = lastMatch(t, /(?:answer|choice|decision|winner|best)\s*[:=]?\s*(?:candidate\s*)?([A-Z])\b/i);
  if (labelled && labels.includes(labelled[1].toUpperCase())) return labelled[1].toUpperCase();
  const lone = [...new Set(t.match(/\b[A-Z]\b/g) ?? [])].filter((l) => labels.includes(l));
  return lone.length === 1 ? lone[0] : undefined;
}

export const decisionOnly: VerifierModeDefinition<'decision-only'> = {
  id: 'decision-only',
  aliases: ['decision'],
  costRank: 0,
  stepDownTarget: true,
  prompt: 'decision',
  plan: ({ viable, texts, labels, instruction, history, prompt }) => [
    { maxTokens: DECISION_TOKENS, messages: prompt({ instruction, history, labels: labels.join(', '), candidates: renderCandidates(viable.map((i) => texts[i])) }) },
  ],
  usable: (text, labels) => parseDecision(text, labels) !== undefined,
  interpret({ answers, viable, labels, failure }) {
    const pick = answers[0] !== undefined ? parseDecision(answers[0], labels) : undefined;
    if (!pick) return failure(`decision-only answer named no candidate (${snippet(answers[0])})`);
    return { scores: new Map(viable.map((i, k) => [i, labels[k] === pick ? 1 : 0])) };
  },
};
