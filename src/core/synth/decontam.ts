import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import { loadTask } from '../tasks/load';
import { formatOfListing } from '../tasks/formats';

/**
 * Decontamination of a synthesised corpus against a benchmark, as the Tev paper reports it:
 * 13-gram and 8-gram overlap between each synthesised prompt and the benchmark's instructions, and
 * the distribution of each prompt's nearest-neighbour Jaccard similarity (word sets). A pair that
 * shares any 13-gram is flagged as contaminated.
 */
export interface PromptDoc { id: string; text: string }

export interface DecontamPair { corpus: string; benchmark: string; shared13: number; shared8: number; jaccard: number; example?: string }

export interface DecontamReport {
  corpusTasks: number;
  benchmarkTasks: number;
  /** Share of corpus prompts with at least one 13-gram (8-gram) found in some benchmark instruction. */
  overlap13: number;
  overlap8: number;
  /** Share of all corpus n-grams found anywhere in the benchmark. */
  gramRate13: number;
  gramRate8: number;
  /** Nearest-prompt Jaccard similarity per corpus prompt: quantiles and a 10-bucket histogram over [0, 1]. */
  jaccard: { min: number; median: number; p95: number; max: number; mean: number; histogram: number[] };
  flagged: DecontamPair[];
  /** Each corpus prompt's nearest benchmark instruction. */
  nearest: DecontamPair[];
}

export function tokens(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

export function ngrams(words: string[], n: number): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + n <= words.length; i++) out.add(words.slice(i, i + n).join(' '));
  return out;
}

export function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 0;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))];
}

export function decontaminate(corpus: PromptDoc[], benchmark: PromptDoc[]): DecontamReport {
  const bench = benchmark.map((b) => {
    const words = tokens(b.text);
    return { id: b.id, words: new Set(words), g13: ngrams(words, 13), g8: ngrams(words, 8) };
  });
  // Which benchmark instructions hold each n-gram (for naming the pair).
  const owners13 = new Map<string, number[]>();
  const owners8 = new Map<string, number[]>();
  bench.forEach((b, i) => {
    for (const g of b.g13) owners13.set(g, [...(owners13.get(g) ?? []), i]);
    for (const g of b.g8) owners8.set(g, [...(owners8.get(g) ?? []), i]);
  });
  let with13 = 0, with8 = 0, grams13 = 0, hit13 = 0, grams8 = 0, hit8 = 0;
  const flagged: DecontamPair[] = [];
  const nearest: DecontamPair[] = [];
  const sims: number[] = [];
  for (const c of corpus) {
    const words = tokens(c.text);
    const set = new Set(words);
    const g13 = ngrams(words, 13);
    const g8 = ngrams(words, 8);
    const shared13 = new Map<number, { n: number; example: string }>();
    const shared8 = new Map<number, number>();
    for (const g of g13) {
      const owners = owners13.get(g);
      grams13++;
      if (!owners) continue;
      hit13++;
      for (const o of owners) shared13.set(o, { n: (shared13.get(o)?.n ?? 0) + 1, example: shared13.get(o)?.example ?? g });
    }
    for (const g of g8) {
      const owners = owners8.get(g);
      grams8++;
      if (!owners) continue;
      hit8++;
      for (const o of owners) shared8.set(o, (shared8.get(o) ?? 0) + 1);
    }
    if (shared13.size > 0) with13++;
    if (shared8.size > 0) with8++;
    let best = -1, bestSim = -1;
    bench.forEach((b, i) => {
      const s = jaccard(set, b.words);
      if (s > bestSim) { bestSim = s; best = i; }
    });
    if (best >= 0) {
      sims.push(bestSim);
      nearest.push({ corpus: c.id, benchmark: bench[best].id, shared13: shared13.get(best)?.n ?? 0, shared8: shared8.get(best) ?? 0, jaccard: round(bestSim) });
    }
    for (const [i, v] of shared13) flagged.push({ corpus: c.id, benchmark: bench[i].id, shared13: v.n, shared8: shared8.get(i) ?? 0, jaccard: round(jaccard(set, bench[i].words)), example: v.example });
  }
  const sorted = [...sims].sort((a, b) => a - b);
  const histogram = Array.from({ length: 10 }, () => 0);
  for (const s of sims) histogram[Math.min(9, Math.floor(s * 10))]++;
  const share = (n: number, d: number) => (d === 0 ? 0 : round(n / d));
  return {
    corpusTasks: corpus.length,
    benchmarkTasks: benchmark.length,
    overlap13: share(with13, corpus.length),
    overlap8: share(with8, corpus.length),
    gramRate13: share(hit13, grams13),
    gramRate8: share(hit8, grams8),
    jaccard: { min: round(sorted[0] ?? 0), median: round(quantile(sorted, 0.5)), p95: round(quantile(sorted, 0.95)), max: round(sorted.at(-1) ?? 0), mean: round(sims.reduce((s, x) => s + x, 0) / Math.max(1, sims.length)), histogram },
    flagged: flagged.sort((a, b) => b.shared13 - a.shared13 || (a.corpus < b.corpus ? -1 : 1)),
    nearest,
  };
}

/** Instructions of every task (task.yaml or task.toml) under a directory, up to four levels deep. */
export async function loadPrompts(root: string): Promise<{ docs: PromptDoc[]; problems: string[] }> {
  const docs: PromptDoc[] = [];
  const problems: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (depth === 0) throw new TbrlError('DECONTAM_NO_DIR', `cannot read ${dir}: ${errorMessage(err)}`, 'pass a directory that holds task directories (task.yaml or task.toml).');
      return;
    }
    if (formatOfListing(new Set(entries.map((e) => e.name))) !== undefined) {
      try {
        const t = await loadTask(dir);
        docs.push({ id: t.id, text: t.instruction });
      } catch (err) {
        problems.push(`${dir}: ${errorMessage(err)}`);
      }
      return;
    }
    if (depth >= 4) return;
    for (const e of entries) if (e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules') await walk(join(dir, e.name), depth + 1);
  };
  await walk(root, 0);
  return { docs, problems };
}
