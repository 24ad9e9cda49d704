/**
 * Chaos cases are node:test tests that also leave a row for the table scripts/chaos.mjs prints:
 * what was tried, what should happen, what did happen. Pass/fail comes from the test runner, so
 * a case that crashes before writing its row still counts as failed.
 *
 *   chaosCase('fork bomb', 'pids capped, container answers, reaped', async () => `${n} procs max`);
 */
import { test } from 'node:test';
import { appendFileSync } from 'node:fs';
import { basename } from 'node:path';
import { errorMessage } from '../../../src/core/errors';

const rowsFile = process.env.TBRL_CHAOS_ROWS;

export interface ChaosRow {
  type: 'row';
  area: string;
  tried: string;
  expected: string;
  happened: string;
  ok: boolean;
  ms: number;
}

function area(): string {
  const file = process.argv.find((a) => a.endsWith('.test.ts')) ?? '';
  return basename(file, '.test.ts') || 'chaos';
}

function emit(record: object): void {
  if (rowsFile) appendFileSync(rowsFile, JSON.stringify(record) + '\n');
}

/** Names a run id (or a container label run id) the suite created, so the after-check looks for its leftovers. */
export function recordRunId(runId: string): void {
  emit({ type: 'run', runId });
}

/** Extra numbers for the closing report (throughput). */
export function recordMetric(name: string, value: string): void {
  emit({ type: 'metric', name, value });
}

export function chaosCase(tried: string, expected: string, fn: () => Promise<string>, options: { timeout?: number } = {}): void {
  test(tried, { timeout: options.timeout ?? 120_000 }, async () => {
    const started = Date.now();
    const a = process.env.TBRL_CHAOS_AREA ?? area();
    try {
      const happened = await fn();
      emit({ type: 'row', area: a, tried, expected, happened, ok: true, ms: Date.now() - started } satisfies ChaosRow);
    } catch (err) {
      emit({ type: 'row', area: a, tried, expected, happened: `FAILED: ${errorMessage(err).split('\n').slice(0, 3).join(' ')}`, ok: false, ms: Date.now() - started } satisfies ChaosRow);
      throw err;
    }
  });
}
