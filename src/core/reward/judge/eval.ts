import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TbrlError, errorMessage } from '../../errors';
import { parseTrajectory } from '../../trajectory/reader';
import type { TrajectoryLine } from '../../trajectory/schema';
import type { JudgeBackendConfig } from './backends';
import { Judge, type JudgeOptions } from './index';

/**
 * Judge evaluation: hand-written trajectories with the score range each deserves, scored k times
 * per judge model. A judge worth training against lands inside the ranges, consistently.
 */
export interface EvalCase {
  id: string;
  expected: [number, number];
  why?: string;
  lines: TrajectoryLine[];
}

export interface CaseResult {
  id: string;
  expected: [number, number];
  /** One entry per attempt; null where the judge gave no usable score. */
  scores: Array<number | null>;
  missing: string[];
  inRange: number;
  mean: number | null;
  /** max − min over the attempts that produced a score. */
  spread: number | null;
}

export interface ModelReport {
  backend: string;
  promptVersion: string;
  attempts: number;
  cases: CaseResult[];
  /** In-range scores over all attempts (a missing score counts as a miss). */
  passRate: number;
  meanScore: number | null;
  /** Mean over cases of the per-case spread. */
  meanSpread: number | null;
  missingCount: number;
}

const EXAMPLE = '{"cases": [{"id": "good", "file": "good.jsonl", "expected": [0.75, 1.0]}]}';

export async function loadEvalSet(dir: string): Promise<EvalCase[]> {
  const configPath = join(dir, 'cases.json');
  let config: unknown;
  try {
    config = JSON.parse(await readFile(configPath, 'utf8'));
  } catch (err) {
    throw new TbrlError('judge-eval.bad-set', `Cannot read the judge evaluation set ${configPath}: ${errorMessage(err)}`, `give --set a directory with cases.json like ${EXAMPLE} and the trajectory files it names`);
  }
  const cases = (config as { cases?: unknown }).cases;
  if (!Array.isArray(cases) || cases.length === 0) throw new TbrlError('judge-eval.bad-set', `${configPath}: "cases" must be a non-empty list`, `write e.g. ${EXAMPLE}`);
  const out: EvalCase[] = [];
  for (const [i, c] of cases.entries()) {
    const { id, file, expected, why } = (c ?? {}) as Record<string, unknown>;
    const range = expected as number[];
    if (typeof id !== 'string' || typeof file !== 'string' || !Array.isArray(range) || range.length !== 2 || !range.every((x) => typeof x === 'number' && x >= 0 && x <= 1) || range[0] > range[1]) {
      throw new TbrlError('judge-eval.bad-set', `${configPath}: case ${i + 1} needs "id", "file" and "expected": [low, high] within [0, 1]`, `write e.g. ${EXAMPLE}`);
    }
    const path = join(dir, file);
    const t = parseTrajectory(await readFile(path, 'utf8').catch((err: unknown) => {
      throw new TbrlError('judge-eval.bad-set', `${configPath}: case "${id}" names ${file}, which cannot be read: ${errorMessage(err)}`, 'put the trajectory next to cases.json');
    }), path);
    out.push({ id, expected: [range[0], range[1]], why: typeof why === 'string' ? why : undefined, lines: [t.header, ...t.steps, ...(t.footer ? [t.footer] : [])] });
  }
  return out;
}

/** The bundled set: test/fixtures/judge-eval in a checkout (sources or dist/ bundles). */
export function defaultEvalSetDir(cwd = process.cwd()): string | undefined {
  const rel = join('test', 'fixtures', 'judge-eval');
  return [join(cwd, rel), resolve(__dirname, '..', rel), resolve(__dirname, '..', '..', '..', '..', rel)].find((d) => existsSync(join(d, 'cases.json')));
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const r4 = (x: number | null) => (x === null ? null : Math.round(x * 1e4) / 1e4);

export interface RunJudgeEvalOptions {
  cases: EvalCase[];
  backend: JudgeBackendConfig;
  attempts: number;
  judge?: Omit<JudgeOptions, 'backend'>;
  /** Judgements run at once (default 2): local servers and rate limits both prefer few. */
  concurrency?: number;
  onProgress?: (line: string) => void;
}

export async function runJudgeEval(options: RunJudgeEvalOptions): Promise<ModelReport> {
  if (!Number.isInteger(options.attempts) || options.attempts < 1) {
    throw new TbrlError('judge-eval.bad-attempts', `--attempts must be a whole number of at least 1, got ${options.attempts}`, 'use e.g. --attempts 3');
  }
  const judge = new Judge({ log: () => undefined, ...options.judge, backend: options.backend });
  try {
    const jobs = options.cases.flatMap((c) => Array.from({ length: options.attempts }, (_, a) => ({ c, a })));
    const results = new Map<string, Array<{ score: number | null; missing?: string }>>();
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const { c, a } = jobs[next++];
        const r = await judge.score(c.lines);
        const list = results.get(c.id) ?? Array.from({ length: options.attempts }, (): { score: number | null; missing?: string } => ({ score: null }));
        list[a] = r.ok ? { score: r.score } : { score: null, missing: r.missing };
        results.set(c.id, list);
        options.onProgress?.(`${judge.switch.label} ${c.id} #${a + 1}: ${r.ok ? r.score.toFixed(2) : `missing (${r.missing})`}`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));

    const cases: CaseResult[] = options.cases.map((c) => {
      const list = results.get(c.id) ?? [];
      const scores = list.map((x) => x.score);
      const got = scores.filter((s): s is number => s !== null);
      return {
        id: c.id,
        expected: c.expected,
        scores,
        missing: list.map((x) => x.missing).filter((m): m is string => !!m),
        inRange: got.filter((s) => s >= c.expected[0] - 1e-9 && s <= c.expected[1] + 1e-9).length,
        mean: r4(mean(got)),
        spread: got.length ? r4(Math.max(...got) - Math.min(...got)) : null,
      };
    });
    const all = cases.flatMap((c) => c.scores.filter((s): s is number => s !== null));
    const spreads = cases.map((c) => c.spread).filter((s): s is number => s !== null);
    return {
      backend: judge.switch.label ?? 'none',
      promptVersion: judge.promptVersion,
      attempts: options.attempts,
      cases,
      passRate: r4(cases.reduce((a, c) => a + c.inRange, 0) / (cases.length * options.attempts)) ?? 0,
      meanScore: r4(mean(all)),
      meanSpread: r4(mean(spreads)),
      missingCount: cases.reduce((a, c) => a + c.missing.length, 0),
    };
  } finally {
    judge.close();
  }
}

export function formatReport(reports: ModelReport[]): string {
  const fmt = (x: number | null) => (x === null ? '  -  ' : x.toFixed(2));
  const lines: string[] = [];
  for (const r of reports) {
    lines.push(`judge ${r.backend}  (prompt ${r.promptVersion}, ${r.attempts} attempt(s) per case)`);
    lines.push(`  ${'case'.padEnd(14)} ${'expected'.padEnd(11)} ${'in range'.padEnd(9)} ${'mean'.padEnd(5)} ${'spread'.padEnd(6)} scores`);
    for (const c of r.cases) {
      lines.push(`  ${c.id.padEnd(14)} ${`${c.expected[0].toFixed(2)}-${c.expected[1].toFixed(2)}`.padEnd(11)} ${`${c.inRange}/${c.scores.length}`.padEnd(9)} ${fmt(c.mean).padEnd(5)} ${fmt(c.spread).padEnd(6)} ${c.scores.map((s) => (s === null ? 'missing' : s.toFixed(2))).join(' ')}`);
    }
    lines.push(`  pass rate ${(r.passRate * 100).toFixed(0)}%  mean ${fmt(r.meanScore)}  mean spread ${fmt(r.meanSpread)}${r.missingCount ? `  missing ${r.missingCount}` : ''}`, '');
  }
  return lines.join('\n');
}
