import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { COVERAGE_AXES, type CoverageLabels } from './generate';

/** How often each value of each coverage axis occurs in a corpus (lists count each member; maps count their values). */
export interface CoverageRow { axis: string; values: Record<string, number>; distinct: number }

function valuesOf(v: unknown): string[] {
  if (Array.isArray(v)) return [...new Set(v.map(String))];
  if (v && typeof v === 'object') return [...new Set(Object.values(v as Record<string, unknown>).map(String))];
  return [String(v)];
}

export function coverageTable(labels: CoverageLabels[]): CoverageRow[] {
  return COVERAGE_AXES.map((axis) => {
    const values: Record<string, number> = {};
    for (const l of labels) for (const v of valuesOf(l[axis])) values[v] = (values[v] ?? 0) + 1;
    return { axis, values, distinct: Object.keys(values).length };
  });
}

/** The table as text: one line per axis, values by frequency (ties by name), long lists cut. */
export function formatCoverageTable(rows: CoverageRow[], tasks: number, maxValues = 8): string {
  const width = Math.max(...rows.map((r) => r.axis.length));
  const lines = [`coverage of ${tasks} task(s) on ${rows.length} axes (value ×tasks)`];
  for (const r of rows) {
    const sorted = Object.entries(r.values).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const shown = sorted.slice(0, maxValues).map(([v, n]) => `${v} ×${n}`).join(', ');
    lines.push(`  ${r.axis.padEnd(width)}  ${String(r.distinct).padStart(3)} distinct: ${shown}${sorted.length > maxValues ? `, … ${sorted.length - maxValues} more` : ''}`);
  }
  return lines.join('\n');
}

/** Whether a task's labels match a filter such as `field=quantum computing` or `faultClasses=stale-cache` (any axis, substring). */
export function labelsMatch(labels: Partial<CoverageLabels>, query: string): boolean {
  const eq = query.indexOf('=');
  if (eq < 0) return COVERAGE_AXES.some((a) => labels[a] !== undefined && valuesOf(labels[a]).some((v) => v.toLowerCase().includes(query.toLowerCase())));
  const axis = query.slice(0, eq).trim() as keyof CoverageLabels;
  const want = query.slice(eq + 1).trim().toLowerCase();
  return labels[axis] !== undefined && valuesOf(labels[axis]).some((v) => v.toLowerCase().includes(want));
}

/** A task's coverage labels (tests/coverage.json, written by `tbrl synth`), or undefined for other tasks. */
export async function readTaskLabels(taskDir: string): Promise<Partial<CoverageLabels> | undefined> {
  try {
    const parsed = JSON.parse(await readFile(join(taskDir, 'tests', 'coverage.json'), 'utf8')) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Partial<CoverageLabels>) : undefined;
  } catch {
    return undefined;
  }
}

/** Every whitespace-separated term must match: `axis=value` a label, a plain word the name or any label. */
export function taskMatchesFilter(name: string, labels: Partial<CoverageLabels> | undefined, query: string): boolean {
  return query.trim().split(/\s+/).filter(Boolean).every((term) => (!term.includes('=') && name.toLowerCase().includes(term.toLowerCase())) || (labels !== undefined && labelsMatch(labels, term)));
}
