import { TbrlError } from '../errors';
import type { TestOutcome } from '../trajectory/schema';
import { statusPasses, type PytestResult } from './pytest-summary';

/**
 * Weighted test score (Terminal-Bench-RL's test_weights.json): Σ w·passed / Σ w.
 * Two deliberate departures from the original: a weighted test that never ran counts as failed
 * (status `not-run`), and weights that name no test that ran are a task error instead of a silent
 * switch to equal weights — either would otherwise let a broken task hand out free reward.
 */
export interface TestScore {
  score: number;
  outcomes: TestOutcome[];
}

/** Float noise (0.1 + 0.2) must not make two identical reward records differ. */
const round = (x: number) => Math.round(x * 1e12) / 1e12;

/** The names a weight key may use for one pytest node id, most specific first. */
export function nameForms(nodeId: string): string[] {
  const parts = nodeId.split('::');
  const forms = [nodeId];
  if (parts.length > 1) {
    forms.push(parts.slice(1).join('::'));
    forms.push(parts[parts.length - 1]);
  }
  // Terminal-Bench-RL weight files often drop the `test_` prefix of the function name.
  const last = parts[parts.length - 1];
  if (last.startsWith('test_')) forms.push(last.slice('test_'.length));
  return [...new Set(forms)];
}

const testName = (nodeId: string) => nodeId.split('::').at(-1) ?? nodeId;
const baseName = (name: string) => name.replace(/\[.*\]$/s, '');

export function validateWeights(weights: Record<string, unknown>, source = 'test_weights.json'): Record<string, number> {
  const bad = Object.entries(weights).filter(([, w]) => typeof w !== 'number' || !Number.isFinite(w) || w < 0);
  if (bad.length > 0) {
    throw new TbrlError(
      'reward.bad-weights',
      `${source}: weights must be non-negative numbers; got ${bad.map(([k, w]) => `${JSON.stringify(k)}: ${JSON.stringify(w)}`).join(', ')}.`,
      'give every test a number, e.g. {"test_hello_file_exists": 0.5, "test_hello_file_content": 0.5}',
    );
  }
  const valid = weights as Record<string, number>;
  if (Object.keys(valid).length > 0 && Object.values(valid).reduce((a, b) => a + b, 0) <= 0) {
    throw new TbrlError('reward.bad-weights', `${source}: the weights sum to 0, so no test can earn reward.`, 'give at least one test a positive weight');
  }
  return valid;
}

export function scoreTests(results: PytestResult[], weights?: Record<string, number>): TestScore {
  if (!weights || Object.keys(weights).length === 0) {
    const n = results.length;
    const outcomes = results.map((r) => ({ name: r.nodeId, status: r.status, weight: n ? 1 / n : 0 }));
    const passed = results.filter((r) => statusPasses(r.status)).length;
    return { score: n ? round(passed / n) : 0, outcomes };
  }
  validateWeights(weights);

  // Resolve every result to at most one weight key: exact forms first, then the unparametrised
  // name (a weight on `test_x` is shared equally by `test_x[a]`, `test_x[b]`, ...).
  const keyOf = new Map<PytestResult, string>();
  for (const r of results) {
    const exact = nameForms(r.nodeId).find((f) => f in weights);
    const base = exact ?? nameForms(r.nodeId).map(baseName).find((f) => f in weights);
    if (base !== undefined) keyOf.set(r, base);
  }
  const named = results.filter((r) => r.nodeId.includes('::'));
  if (named.length > 0 && keyOf.size === 0) {
    throw new TbrlError(
      'reward.weights-mismatch',
      `test_weights.json names ${Object.keys(weights).map((k) => JSON.stringify(k)).join(', ')} but the tests that ran are ${named.slice(0, 8).map((r) => JSON.stringify(testName(r.nodeId))).join(', ')}${named.length > 8 ? ', ...' : ''}: no weight matches any test.`,
      `key test_weights.json by the test function names, e.g. {${named.slice(0, 2).map((r) => `"${testName(r.nodeId)}": ${(1 / Math.min(2, named.length)).toFixed(2)}`).join(', ')}}`,
    );
  }

  const outcomes: TestOutcome[] = [];
  let earned = 0;
  let total = 0;
  for (const [key, w] of Object.entries(weights)) {
    const members = results.filter((r) => keyOf.get(r) === key);
    total += w;
    if (members.length === 0) {
      outcomes.push({ name: key, status: 'not-run', weight: w });
      continue;
    }
    for (const r of members) {
      const share = w / members.length;
      outcomes.push({ name: r.nodeId, status: r.status, weight: share });
      if (statusPasses(r.status)) earned += share;
    }
  }
  // Tests without a weight still appear in the record (weight 0) so a reader sees everything that ran.
  for (const r of results) if (!keyOf.has(r)) outcomes.push({ name: r.nodeId, status: r.status, weight: 0 });
  return { score: round(earned / total), outcomes };
}
