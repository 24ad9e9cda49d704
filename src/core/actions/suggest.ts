/**
 * Edit distance with transpositions (`grpe` is one slip from `grep`), bounded: returns
 * `limit + 1` as soon as the distance must exceed `limit`.
 */
export function editDistance(a: string, b: string, limit = 3): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prevPrev[j - 2]! + 1);
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > limit) return limit + 1;
    prevPrev = prev;
    prev = cur;
  }
  return prev[b.length]!;
}

/** The closest known name to a misspelt one (case, `-`/`_` and small typos), if any is close. */
export function closest(word: string, known: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/-/g, '_');
  const w = norm(word.slice(0, 64));
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const kn = norm(k);
    if (kn === w) return k;
    const d = editDistance(w, kn, 3);
    const allowed = Math.max(1, Math.min(3, Math.floor(kn.length / 3)));
    if (d <= allowed && d < bestD) {
      best = k;
      bestD = d;
    }
  }
  if (best) return best;
  // `timeout` for `timeout_secs`, `path` for `file_path`: a known name containing the word or vice versa.
  return known.find((k) => w.length >= 3 && (norm(k).includes(w) || w.includes(norm(k))));
}

export function didYouMean(word: string, known: readonly string[]): string {
  const c = closest(word, known);
  return c ? ` (did you mean \`${c}\`?)` : '';
}
