import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DETECTION_ORDER, FORMAT_FLAGS, TASK_FORMATS, WRITABLE_FORMATS, formatFromFlag, formatFlagsSentence, formatOfListing, requireTaskFormat, taskFormat } from '../../src/core/tasks/formats';
import { detectTaskFormat, loadTask } from '../../src/core/tasks/load';
import { scaffoldTask } from '../../src/core/tasks/scaffold';
import { TbrlError } from '../../src/core/errors';

test('the registry: one adapter per id, flags and aliases resolve, devcontainer has none', () => {
  assert.deepEqual(WRITABLE_FORMATS, ['terminal-bench', 'harbor']);
  assert.equal(new Set(TASK_FORMATS.map((f) => f.taskFile)).size, TASK_FORMATS.length, 'each format has its own task file');
  assert.deepEqual(FORMAT_FLAGS, ['tb', 'harbor']);
  assert.equal(formatFlagsSentence(), 'tb or harbor');
  assert.equal(formatFromFlag('tb'), 'terminal-bench');
  assert.equal(formatFromFlag('terminal-bench'), 'terminal-bench');
  assert.equal(formatFromFlag('harbor'), 'harbor');
  assert.equal(formatFromFlag('yaml'), undefined);
  assert.equal(formatFromFlag(undefined), undefined);
  assert.equal(taskFormat('devcontainer'), undefined);
  assert.throws(() => requireTaskFormat('devcontainer'), (e: TbrlError) => e.code === 'TASK_UNKNOWN_FORMAT');
  assert.equal(requireTaskFormat('harbor').instructionFile, 'instruction.md');
  assert.equal(requireTaskFormat('terminal-bench').instructionFile, 'task.yaml');
});

test('detection: a directory with both task files is Harbor, in load and in a listing alike', async () => {
  assert.deepEqual(DETECTION_ORDER.map((f) => f.id), ['harbor', 'terminal-bench']);
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-both-'));
  writeFileSync(join(dir, 'task.yaml'), 'instruction: x\n');
  writeFileSync(join(dir, 'task.toml'), 'version = "1.0"\n');
  assert.equal(await detectTaskFormat(dir), 'harbor');
  assert.equal(formatOfListing(new Set(['task.yaml', 'task.toml'])), 'harbor');
  assert.equal(formatOfListing(new Set(['task.yaml'])), 'terminal-bench');
  assert.equal(formatOfListing(new Set(['README.md'])), undefined);
});

test('every format scaffolds a task that its own detect and read recognise', async () => {
  for (const format of TASK_FORMATS) {
    const dir = join(mkdtempSync(join(tmpdir(), `tbrl-reg-${format.id}-`)), 't');
    const made = await scaffoldTask(dir, { format: format.id });
    assert.ok(made.files.includes(format.taskFile), `${format.id} writes ${format.taskFile}`);
    assert.ok(await format.detect(dir));
    const task = await loadTask(dir);
    assert.equal(task.format, format.id);
    assert.ok(made.files.every((f) => format.structure.has(f.split('/')[0]) || f === 'Dockerfile' || f === 'docker-compose.yaml'), `${format.id}: scaffolded files are the format's own (${made.files.join(', ')})`);
  }
});

test('every format lays out a saved workspace run: its Dockerfile in its environment directory, the solution and the changes kept', () => {
  for (const format of TASK_FORMATS) {
    const files = format.savedRun.files({ dockerfile: 'FROM x\n', tests: 'def test_a(): pass\n', weights: '{}\n', solution: '#!/bin/bash\ngit apply\n', changes: 'diff --git a/x b/x\n', changesFile: 'changes.patch', cd: "cd '/app'", pytest: 'python3 -m pytest' });
    const dockerfile = [format.savedRun.environmentDir, 'Dockerfile'].filter(Boolean).join('/');
    assert.equal(files[dockerfile], 'FROM x\n', `${format.id}: ${dockerfile}`);
    assert.ok(Object.values(files).includes('diff --git a/x b/x\n'), `${format.id}: the run's changes are kept`);
    assert.ok(Object.values(files).includes('#!/bin/bash\ngit apply\n'), `${format.id}: the solution replays them`);
    assert.ok(Object.values(files).some((t) => t.includes("cd '/app'") && t.includes('python3 -m pytest')), `${format.id}: the test runner runs pytest in the workspace`);
    for (const f of Object.keys(files)) assert.ok(format.structure.has(f.split('/')[0]) || f === 'Dockerfile' || f.startsWith('solution'), `${format.id}: ${f} belongs to the format`);
  }
});
