import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { readValidations, recordValidations, VALIDATIONS_FILE } from '../../src/core/tasks/validation-record';
import type { TaskValidation } from '../../src/core/tasks/validate';

function result(path: string, valid: boolean, empty = 0): TaskValidation {
  return {
    path, id: path.split('/').pop(), format: 'terminal-bench', valid,
    load: { status: 'passed' }, static: { status: 'passed', findings: [] }, tev: { status: 'skipped' }, build: { status: 'passed' },
    oracle: { status: 'passed', score: 1 }, empty: { status: valid ? 'passed' : 'failed', score: empty },
    problems: valid ? [] : ['empty agent scored 1: the tests pass without any work\nmore detail on a second line'], warnings: [], durationMs: 1234,
  } as TaskValidation;
}

test('records are merged per task, kept relative to the root, and read back by absolute path', () => {
  const root = mkdtempSync(join(tmpdir(), 'tbrl-valrec-'));
  recordValidations(root, [result(join(root, 'tasks/a'), true), result(join(root, 'tasks/b'), false, 1)], new Date('2026-01-01T00:00:00Z'));
  recordValidations(root, [result('tasks/a', false, 1)], new Date('2026-01-02T00:00:00Z'));
  const stored = JSON.parse(readFileSync(join(root, VALIDATIONS_FILE), 'utf8'));
  assert.deepEqual(Object.keys(stored.tasks).sort(), ['tasks/a', 'tasks/b'], 'relative keys, the re-validated task replaced, the other kept');
  const { records, problem } = readValidations(root);
  assert.equal(problem, undefined);
  const a = records.get(join(root, 'tasks/a'))!;
  assert.deepEqual([a.valid, a.at, a.empty.score], [false, '2026-01-02T00:00:00.000Z', 1]);
  assert.deepEqual(a.problems, ['empty agent scored 1: the tests pass without any work'], 'first line of each problem');
  assert.equal(records.get(join(root, 'tasks/b'))!.valid, false);
});

test('a task outside the root keeps its absolute path; no file means no records', () => {
  const root = mkdtempSync(join(tmpdir(), 'tbrl-valrec-'));
  assert.equal(readValidations(root).records.size, 0);
  const outside = mkdtempSync(join(tmpdir(), 'tbrl-outside-'));
  recordValidations(root, [result(outside, true)]);
  assert.equal(readValidations(root).records.get(outside)?.valid, true);
});

test('a corrupt file is reported, moved aside on the next write (never overwritten) and replaced', () => {
  const root = mkdtempSync(join(tmpdir(), 'tbrl-valrec-'));
  mkdirSync(join(root, '.tbrl'));
  writeFileSync(join(root, VALIDATIONS_FILE), '{"version": 1, "tasks": {');
  assert.match(readValidations(root).problem ?? '', /validations\.json is not valid JSON .*\.corrupt/);
  writeFileSync(join(root, VALIDATIONS_FILE), '{"version": 7}');
  assert.match(readValidations(root).problem ?? '', /not a version-1 validations file/);
  recordValidations(root, [result(join(root, 't'), true)]);
  assert.equal(readFileSync(join(root, `${VALIDATIONS_FILE}.corrupt`), 'utf8'), '{"version": 7}');
  assert.equal(readValidations(root).records.get(join(root, 't'))?.valid, true);
  assert.equal(existsSync(join(root, `${VALIDATIONS_FILE}.${process.pid}.tmp`)), false);
});
