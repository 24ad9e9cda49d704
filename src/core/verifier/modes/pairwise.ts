import { jsonField, lastMatch, strip } from '../answers';
import { renderOne } from '../render';
import { winMatrix, winRates, type PairJudgement } from '../ranking';
import { snippet, type VerifierCall, type VerifierModeDefinition } from './mode';

/** Winner A/B (or a tie) and a margin level 1–3 (2 when the model omits it). */
export function parsePairwise(text: string): { winner: 'A' | 'B' | 'tie'; margin: 1 | 2 | 3 } | undefined {
  const t = strip(text);
  const w = lastMatch(t, /winner\s*[:=]\s*(?:candidate\s*)?(A|B|tie)\b/i);
  let winner = w?.[1];
  if (!winner) {
    const j = jsonField(t, 'winner');
    if (typeof j === 'string') winner = j.replace(/candidate\s*/i, '').trim();
  }
  if (!winner) return undefined;
  const up = winner.toUpperCase();
  if (up !== 'A' && up !== 'B' && up !== 'TIE') return undefined;
  const mm = lastMatch(t, /margin\s*[:=]\s*([123])\b/i);
  const jm = mm ? undefined : jsonField(t, 'margin');
  const level = Number(mm?.[1] ?? jm ?? 2);
  const margin = (level === 1 || level === 3 ? level : 2) as 1 | 2 | 3;
  return { winner: up === 'TIE' ? 'tie' : (up as 'A' | 'B'), margin };
}

export const pairwise: VerifierModeDefinition<'pairwise'> = {
  id: 'pairwise',
  costRank: 3,
  stepDownTarget: true,
  prompt: 'pairwise',
  plan({ viable, texts, instruction, history, maxOutputTokens, prompt }) {
    const calls: VerifierCall[] = [];
    for (let p = 0; p < viable.length; p++) {
      for (let q = p + 1; q < viable.length; q++) {
        const [i, j] = [viable[p], viable[q]];
        // Alternate which side goes first so a verifier's position bias does not favour early samples.
        const aIs = (p + q) % 2 === 0 ? 'i' : 'j';
        const [a, b] = aIs === 'i' ? [texts[i], texts[j]] : [texts[j], texts[i]];
        calls.push({ maxTokens: maxOutputTokens, pair: { i, j, aIs }, messages: prompt({ instruction, history, a: renderOne(a), b: renderOne(b) }) });
      }
    }
    return calls;
  },
  usable: (text) => parsePairwise(text) !== undefined,
  interpret({ calls, answers, viable, n, failure }) {
    const judgements: PairJudgement[] = [];
    calls.forEach((c, k) => {
      const a = answers[k] !== undefined ? parsePairwise(answers[k]) : undefined;
      if (!a) return;
      const { i, j, aIs } = c.pair!;
      const winner = a.winner === 'tie' ? 'tie' : (a.winner === 'A') === (aIs === 'i') ? 'i' : 'j';
      judgements.push({ i, j, winner, margin: a.margin });
    });
    if (judgements.length === 0) return failure(`no pairwise answer had a usable WINNER line (${snippet(answers[0])})`);
    const matrix = winMatrix(n, judgements);
    const rates = winRates(matrix, judgements);
    return { scores: new Map(viable.map((i) => [i, rates[i] ?? 0])), matrix };
  },
};
