import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TbrlError } from '../errors';
import { isPlainObject } from './fields';

export const WEIGHTS_FILE = 'test_weights.json';

const EXAMPLE = '{\n  "test_output_exists": 0.3,\n  "test_output_correct": 0.7\n}';

/** Where test_weights.json may live: the task root (Terminal-Bench-RL) or beside the tests. */
export function weightsCandidates(taskDir: string, testsDir: string): string[] {
  return [join(taskDir, WEIGHTS_FILE), join(testsDir, WEIGHTS_FILE)];
}

export async function readTestWeights(taskDir: string, testsDir: string): Promise<{ file: string; weights: Record<string, number> } | undefined> {
  for (const file of weightsCandidates(taskDir, testsDir)) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    return { file, weights: parseTestWeights(file, text) };
  }
  return undefined;
}

export function parseTestWeights(file: string, text: string): Record<string, number> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    const pos = /position (\d+)/.exec((err as Error).message);
    const line = pos ? text.slice(0, Number(pos[1])).split('\n').length : undefined;
    throw new TbrlError(
      'TASK_FILE_MALFORMED',
      `${file}${line ? `:${line}` : ''}: test_weights.json is not valid JSON: ${(err as Error).message}`,
      `Write a JSON object mapping test names to weights that sum to 1, e.g.\n${EXAMPLE}`,
    );
  }
  if (!isPlainObject(data)) {
    throw new TbrlError('TASK_FIELD_INVALID', `${file}:1: test_weights.json must be a JSON object`, `Map test names to weights, e.g.\n${EXAMPLE}`);
  }
  const weights: Record<string, number> = {};
  for (const [name, value] of Object.entries(data)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      const line = text.split('\n').findIndex((l) => l.includes(JSON.stringify(name))) + 1;
      throw new TbrlError(
        'TASK_FIELD_INVALID',
        `${file}${line ? `:${line}` : ''}: field '${name}' must be a non-negative number, got ${JSON.stringify(value)}`,
        `Give every test a numeric weight, e.g.\n${EXAMPLE}`,
      );
    }
    weights[name] = value;
  }
  // Each weight finite is not enough: 1e308 + 1e308 overflows, and normalising by Infinity gives NaN.
  const sum = Object.values(weights).reduce((a, b) => a + b, 0);
  if (!Number.isFinite(sum)) {
    throw new TbrlError('TASK_FIELD_INVALID', `${file}: the weights sum to ${sum}, which is not a finite number`, `Use weights that sum to 1, e.g.\n${EXAMPLE}`);
  }
  return weights;
}

/**
 * The weight key a pytest test name matches. Terminal-Bench-RL writes keys both with and without
 * the `test_` prefix, and parametrised ids (`test_x[1]`) share their function's weight.
 */
export function weightKeyFor(testName: string, weights: Record<string, number>): string | undefined {
  const bare = testName.replace(/^.*::/, '').replace(/\[.*\]$/, '');
  for (const key of [bare, bare.replace(/^test_/, ''), `test_${bare}`]) {
    if (Object.prototype.hasOwnProperty.call(weights, key)) return key;
  }
  return undefined;
}

export function serializeTestWeights(weights: Record<string, number>): string {
  return `${JSON.stringify(weights, null, 2)}\n`;
}
