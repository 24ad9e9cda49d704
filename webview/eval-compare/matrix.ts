import type { Comparison } from '../../src/core/eval/compare';

/**
 * The comparison webview's tasks × jobs matrix: built by the extension host from a core
 * Comparison (buildMatrix), sorted, filtered and formatted in the page. Pure and DOM-free, so the
 * host imports it as well as the browser bundle; it imports only types from src/core.
 */

/** A rate as a percentage, `–` when there is none (the Eval Jobs tree formats the same way: core/eval/view-model.ts). */
export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined ? '–' : `${(x * 100).toFixed(digits)}%`;
}

export interface MatrixCell {
  rate: number | null;
  /** Trial names of this task in this job, by attempt. */
  trials: string[];
  colour: string;
}

export interface MatrixRow {
  task: string;
  cells: MatrixCell[];
  /** Last job's rate minus the first's; null when either did not score the task. */
  difference: number | null;
  /** The majority outcome (rate ≥ 0.5) changed between the first job and some other. */
  flipped: boolean;
}

export interface MatrixView {
  jobs: Array<{ label: string; dir: string; passRate: number | null; scored: number; masked: number }>;
  rows: MatrixRow[];
  /** Each job against the first (the bootstrap of compare.ts); empty with one job. */
  differences: Array<{ job: string; against: string; tasks: number; mean: number; low: number; high: number; level: number; resamples: number }>;
}

/**
 * Pass rate → a red (0) … amber (0.5) … green (1) fill; grey where nothing was scored. Lightness
 * stays mid-range so the black or white label chosen by `labelColour` is readable on both themes.
 */
export function rateColour(rate: number | null): string {
  if (rate === null || !Number.isFinite(rate)) return 'hsl(0, 0%, 50%)';
  const r = Math.min(1, Math.max(0, rate));
  return `hsl(${Math.round(r * 120)}, 65%, 42%)`;
}

export function buildMatrix(c: Comparison): MatrixView {
  const flippedTasks = new Set(c.flipped.map((f) => f.task));
  const last = c.jobs.length - 1;
  return {
    jobs: c.jobs.map((j) => ({ ...j })),
    rows: c.tasks.map((t) => ({
      task: t.task,
      cells: t.rates.map((rate, i) => ({ rate, trials: t.trials[i] ?? [], colour: rateColour(rate) })),
      difference: last > 0 && t.rates[0] !== null && t.rates[last] !== null ? (t.rates[last] as number) - (t.rates[0] as number) : null,
      flipped: flippedTasks.has(t.task),
    })),
    differences: c.differences.map((d) => ({ job: d.job, against: d.against, tasks: d.tasks, mean: d.interval.mean, low: d.interval.low, high: d.interval.high, level: d.interval.level, resamples: d.interval.resamples })),
  };
}

export type SortBy = { by: 'name' } | { by: 'job'; index: number } | { by: 'difference' };

/**
 * Rows sorted by task name, by one job's rate or by the difference; unscored cells (null) go last
 * in either direction, and ties keep name order so the matrix does not jump between refreshes.
 */
export function sortRows(rows: readonly MatrixRow[], sort: SortBy, descending = false): MatrixRow[] {
  const key = (r: MatrixRow): number | null => (sort.by === 'job' ? r.cells[sort.index]?.rate ?? null : sort.by === 'difference' ? r.difference : null);
  const byName = (a: MatrixRow, b: MatrixRow): number => (a.task < b.task ? -1 : a.task > b.task ? 1 : 0);
  return [...rows].sort((a, b) => {
    if (sort.by === 'name') return descending ? -byName(a, b) : byName(a, b);
    const ka = key(a);
    const kb = key(b);
    if (ka === null && kb === null) return byName(a, b);
    if (ka === null) return 1;
    if (kb === null) return -1;
    return ka === kb ? byName(a, b) : descending ? kb - ka : ka - kb;
  });
}

/**
 * The filter box: whitespace-separated words, all of which must match. A plain word matches a
 * substring of the task name (case-insensitive); `is:flipped` keeps flipped tasks; `-word` excludes.
 */
export function filterRows(rows: readonly MatrixRow[], query: string): MatrixRow[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [...rows];
  return rows.filter((r) => words.every((w) => {
    const negate = w.startsWith('-') && w.length > 1;
    const word = negate ? w.slice(1) : w;
    const hit = word === 'is:flipped' ? r.flipped : r.task.toLowerCase().includes(word);
    return negate ? !hit : hit;
  }));
}

export function signedPoints(x: number): string {
  const v = x * 100;
  return `${v > 0 ? '+' : v < 0 ? '−' : '±'}${Math.abs(v).toFixed(1)}`;
}

/** `+12.5 pts [−3.0, +25.0] 95% CI over 8 tasks`. */
export function differenceLine(d: MatrixView['differences'][number]): string {
  return `${signedPoints(d.mean)} pts, ${Math.round(d.level * 100)}% CI [${signedPoints(d.low)}, ${signedPoints(d.high)}] over ${d.tasks} task${d.tasks === 1 ? '' : 's'}`;
}
