import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeEvalJob } from '../helpers/eval-jobs-fixture';
import { compareJobs, loadJob } from '../../src/core/eval/compare';
import { jobDescription, summariseJob, taskDescription, trialDescription } from '../../src/core/eval/view-model';
import { buildMatrix, differenceLine, filterRows, rateColour, sortRows, type MatrixRow } from '../../webview/eval-compare/matrix';

function twoJobs(): { root: string; a: string; b: string } {
  const root = mkdtempSync(join(tmpdir(), 'tbrl-eval-vm-'));
  const a = join(root, 'a');
  const b = join(root, 'b');
  writeEvalJob(a, { alpha: ['passed', 'passed'], beta: ['failed', 'failed'], gamma: ['passed', 'failed'], delta: ['environment_error', 'environment_error'] });
  writeEvalJob(b, { alpha: ['failed', 'failed'], beta: ['passed', 'passed'], gamma: ['passed', 'passed'], delta: ['passed', 'failed'] }, { model: 'm2' });
  return { root, a, b };
}

test('a job row shows pass@1, trials done/total and counts by outcome class in canonical order', () => {
  const { root, a } = twoJobs();
  try {
    const loaded = loadJob(a);
    const s = summariseJob(a, loaded.label, loaded.results, 1);
    // alpha 1.0, beta 0, gamma 0.5; delta has no scored trial and is left out of the mean.
    assert.equal(s.passAt1, 0.5);
    assert.equal(jobDescription(s), 'pass@1 50.0% · 8/8 · passed 3 · failed 3 · environment_error 2 · 1 running');
    assert.equal(taskDescription(loaded.results.tasks.find((t) => t.task === 'gamma')!, 2), '50% · 1/2 passed');
    assert.equal(taskDescription(loaded.results.tasks.find((t) => t.task === 'delta')!, 2), '– · 0/0 passed · 2 masked');
    assert.equal(trialDescription(loaded.trials.get('delta__1')!), 'environment_error · 1.5 s · masked');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a partial job counts only what is done, and says how many trials of a task are missing', () => {
  const root = mkdtempSync(join(tmpdir(), 'tbrl-eval-vm-'));
  try {
    writeEvalJob(root, { alpha: ['passed'], beta: [] }, { attempts: 3 });
    const loaded = loadJob(root);
    const s = summariseJob(root, 'x', loaded.results);
    assert.equal(s.done, 1);
    assert.equal(s.total, 6);
    assert.equal(s.complete, false);
    assert.equal(taskDescription(loaded.results.tasks[0], 3), '100% · 1/1 passed · 1/3 done');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the matrix has one row per task with rates, colours, trials, the difference and the flipped tasks of compare.ts', () => {
  const { root, a, b } = twoJobs();
  try {
    const c = compareJobs([loadJob(a), loadJob(b)], { seed: 1 });
    const m = buildMatrix(c);
    assert.deepEqual(m.rows.map((r) => r.task), ['alpha', 'beta', 'delta', 'gamma']);
    const alpha = m.rows[0];
    assert.deepEqual(alpha.cells.map((x) => x.rate), [1, 0]);
    assert.deepEqual(alpha.cells[0].trials, ['alpha__1', 'alpha__2']);
    assert.equal(alpha.cells[0].colour, rateColour(1));
    assert.equal(alpha.difference, -1);
    assert.equal(m.rows.find((r) => r.task === 'delta')!.difference, null, 'job a scored no delta trial');
    assert.ok(m.rows.find((r) => r.task === 'alpha')!.flipped && m.rows.find((r) => r.task === 'beta')!.flipped);
    assert.equal(m.rows.find((r) => r.task === 'gamma')!.flipped, false, '0.5 → 1.0 stays on the passing side');
    assert.equal(m.differences.length, 1);
    const d = m.differences[0];
    assert.equal(d.mean, c.differences[0].interval.mean);
    assert.equal(d.tasks, 3);
    assert.ok(d.low <= d.mean && d.mean <= d.high);
    assert.match(differenceLine(d), /^[+−±]\d+\.\d pts, 95% CI \[[+−±]\d+\.\d, [+−±]\d+\.\d\] over 3 tasks$/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('colours run red → amber → green with the rate; unscored cells are grey', () => {
  assert.equal(rateColour(0), 'hsl(0, 65%, 42%)');
  assert.equal(rateColour(0.5), 'hsl(60, 65%, 42%)');
  assert.equal(rateColour(1), 'hsl(120, 65%, 42%)');
  assert.equal(rateColour(null), 'hsl(0, 0%, 50%)');
  assert.equal(rateColour(7), rateColour(1), 'clamped');
});

const row = (task: string, rates: Array<number | null>, flipped = false): MatrixRow => ({
  task,
  cells: rates.map((rate) => ({ rate, trials: [], colour: rateColour(rate) })),
  difference: rates[0] !== null && rates.at(-1) !== null ? (rates.at(-1) as number) - (rates[0] as number) : null,
  flipped,
});

test('sorting by name, by a job column or by the difference; unscored rows go last either way; ties keep name order', () => {
  const rows = [row('c', [0.5, 1]), row('a', [1, 0], true), row('b', [null, 0.5]), row('d', [0.5, 0.5])];
  assert.deepEqual(sortRows(rows, { by: 'name' }).map((r) => r.task), ['a', 'b', 'c', 'd']);
  assert.deepEqual(sortRows(rows, { by: 'name' }, true).map((r) => r.task), ['d', 'c', 'b', 'a']);
  assert.deepEqual(sortRows(rows, { by: 'job', index: 0 }, true).map((r) => r.task), ['a', 'c', 'd', 'b']);
  assert.deepEqual(sortRows(rows, { by: 'job', index: 0 }).map((r) => r.task), ['c', 'd', 'a', 'b']);
  assert.deepEqual(sortRows(rows, { by: 'job', index: 1 }).map((r) => r.task), ['a', 'b', 'd', 'c']);
  assert.deepEqual(sortRows(rows, { by: 'difference' }, true).map((r) => r.task), ['c', 'd', 'a', 'b']);
  assert.deepEqual(sortRows(rows, { by: 'difference' }).map((r) => r.task), ['a', 'd', 'c', 'b']);
  assert.deepEqual(rows.map((r) => r.task), ['c', 'a', 'b', 'd'], 'the input is not reordered');
});

test('the filter matches name substrings case-insensitively, all words at once, -word excludes, is:flipped keeps flipped rows', () => {
  const rows = [row('fix-git', [1, 0], true), row('fix-permissions', [0, 0]), row('hello-world', [1, 1])];
  assert.deepEqual(filterRows(rows, '').map((r) => r.task), ['fix-git', 'fix-permissions', 'hello-world']);
  assert.deepEqual(filterRows(rows, 'FIX').map((r) => r.task), ['fix-git', 'fix-permissions']);
  assert.deepEqual(filterRows(rows, 'fix perm').map((r) => r.task), ['fix-permissions']);
  assert.deepEqual(filterRows(rows, 'fix -git').map((r) => r.task), ['fix-permissions']);
  assert.deepEqual(filterRows(rows, 'is:flipped').map((r) => r.task), ['fix-git']);
  assert.deepEqual(filterRows(rows, '-is:flipped').map((r) => r.task), ['fix-permissions', 'hello-world']);
  assert.deepEqual(filterRows(rows, 'nothing'), []);
});
