/**
 * Margin-weighted win rate. A judged pair (i, j) with winner w and margin level m ∈ {1,2,3}
 * splits one point: the winner gets (1 + m/3)/2, the loser (1 − m/3)/2 — a slight preference is
 * near a tie, a decisive one a full win; a tie gives ½ each. wins[i][j] is i's share of the pair
 * (i, j), so wins[i][j] + wins[j][i] = 1 for judged pairs and both are 0 for unjudged ones.
 * rate(i) = Σ_j wins[i][j] / (number of judged pairs involving i).
 */
export interface PairJudgement { i: number; j: number; winner: 'i' | 'j' | 'tie'; margin: 1 | 2 | 3 }

export function winMatrix(n: number, judgements: PairJudgement[]): number[][] {
  const wins = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (const { i, j, winner, margin } of judgements) {
    const strong = (1 + margin / 3) / 2;
    const share = winner === 'tie' ? 0.5 : winner === 'i' ? strong : 1 - strong;
    wins[i][j] = share;
    wins[j][i] = 1 - share;
  }
  return wins;
}

export function winRates(wins: number[][], judgements: PairJudgement[]): Array<number | undefined> {
  const n = wins.length;
  const pairs = new Array<number>(n).fill(0);
  for (const { i, j } of judgements) { pairs[i]++; pairs[j]++; }
  return wins.map((row, i) => (pairs[i] === 0 ? undefined : row.reduce((a, b) => a + b, 0) / pairs[i]));
}

/** Index of the highest score; ties go to the earlier candidate (the generator's first sample). */
export function argmax(scores: Array<number | undefined>, among: number[]): number | undefined {
  let best: number | undefined;
  for (const i of among) {
    const s = scores[i];
    if (s === undefined) continue;
    if (best === undefined || s > (scores[best] as number)) best = i;
  }
  return best;
}

/** Gap between the best and the runner-up among `among`; undefined with fewer than two scored. */
export function topMargin(scores: Array<number | undefined>, among: number[]): number | undefined {
  const s = among.map((i) => scores[i]).filter((x): x is number => x !== undefined).sort((a, b) => b - a);
  return s.length >= 2 ? s[0] - s[1] : undefined;
}
