import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { lineAttribution, changedFiles } from '../../src/core/attribution/lines';
import { decorationModel } from '../../src/core/attribution/decorations';
import { snapshotChangedFiles, readSnapshotIndex, snapshotFilePath } from '../../src/core/attribution/snapshot';
import { singleFileTar } from '../../src/core/sandbox/archive';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';
import type { FileWrite } from '../../src/core/trace/types';

const header = { type: 'header', schema: 'tbrl.trajectory/1.0', runId: 'r', startedAt: '', task: { id: 't', dir: '/t', format: 'tb', instruction: 'do it' }, policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0', node: 'v20' }, sandbox: { image: 'x', tracing: { available: true } } } as TrajectoryHeader;

function step(index: number, cmd: string, writes: FileWrite[], reads: string[] = []): StepRecord {
  return {
    type: 'step', index, startedAt: '', durationMs: 1, candidates: [], chosenText: cmd, parseErrors: [], usage: { promptTokens: 1, completionTokens: 4 }, todos: [], scratchpad: [],
    actions: [{ kind: 'bash', input: { cmd }, observation: '', ok: true, exitCode: 0, durationMs: 1, trace: { reads, writes, stdoutValues: [], ports: [], processes: [] } }],
  };
}

const steps: StepRecord[] = [
  step(0, 'printf "a\\nb\\nc\\n" > /app/a.py', [{ path: '/app/a.py', created: true, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 3 }], linesAfter: 3 }]),
  // Two lines inserted at the top: step 0's lines move down to 3..5 and keep their owner.
  step(1, "sed -i '1i x\\ny' /app/a.py", [{ path: '/app/a.py', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], linesAfter: 5 }], ['/app/a.py']),
  // Replaces line 4 (step 0's "b").
  step(2, "sed -i '4s/b/B/' /app/a.py", [{ path: '/app/a.py', hunks: [{ oldStart: 4, oldLines: 1, newStart: 4, newLines: 1 }], linesAfter: 5 }], ['/app/a.py']),
  step(3, 'echo n1 > /app/notes.txt; echo n2 >> /app/notes.txt', [{ path: '/app/notes.txt', created: true, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], linesAfter: 2 }]),
  // Reads notes (not in E) and writes out.txt (in E): notes' lines reach E indirectly.
  step(4, 'wc -l /app/notes.txt > /app/out.txt', [{ path: '/app/out.txt', created: true, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1 }], linesAfter: 1 }], ['/app/notes.txt']),
  // Edits line 2 of a task file of 3 lines that nobody reads.
  step(5, "sed -i '2s/.*/z/' /app/orig.py", [{ path: '/app/orig.py', hunks: [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }], linesAfter: 3 }], ['/app/orig.py']),
  step(6, 'rm /app/tmp', [{ path: '/app/tmp', deleted: true, hunks: [], linesAfter: 0 }]),
];
const footer = { type: 'footer', endedAt: '', endReason: 'finished', steps: steps.length, usage: { promptTokens: 0, completionTokens: 0, verifierCalls: 0, verifierOutputTokens: 0 }, verifierTrace: { reads: ['/app/a.py', '/app/out.txt'], writes: [], ports: [], processes: [] } } as TrajectoryFooter;
const run = { header, steps, footer };

const summary = (path: string) => lineAttribution(run, path).lines.map((l) => [l.line, l.step, l.reachedE, l.via]);

test('per-line writer survives an insertion above it and a replacement of one of its lines', () => {
  assert.deepEqual(summary('/app/a.py'), [
    [1, 1, true, 'direct'],
    [2, 1, true, 'direct'],
    [3, 0, true, 'direct'],
    [4, 2, true, 'direct'],
    [5, 0, true, 'direct'],
  ]);
  const a = lineAttribution(run, '/app/a.py');
  assert.equal(a.inE, true);
  assert.equal(a.lines[3].command, "sed -i '4s/b/B/' /app/a.py");
});

test('lines of a file outside E reach E through a consumer that writes a file in E', () => {
  assert.deepEqual(summary('/app/notes.txt'), [[1, 3, true, 'indirect'], [2, 3, true, 'indirect']]);
});

test('original lines have no writer; an edited line of a file nobody checks did not reach E', () => {
  assert.deepEqual(summary('/app/orig.py'), [[1, undefined, false, undefined], [2, 5, false, undefined], [3, undefined, false, undefined]]);
});

test('without a verifier trace nothing reaches E and E is said to be unknown', () => {
  const { verifierTrace: _, ...noTrace } = footer;
  const a = lineAttribution({ header, steps, footer: noTrace as TrajectoryFooter }, '/app/a.py');
  assert.equal(a.eKnown, false);
  assert.ok(a.lines.every((l) => !l.reachedE));
  assert.deepEqual(decorationModel(a).map((d) => d.kind), ['unknown', 'unknown', 'unknown', 'unknown', 'unknown']);
});

test('a path never written has no lines; a non-normal path is normalized', () => {
  assert.deepEqual(lineAttribution(run, '/nope').lines, []);
  assert.equal(lineAttribution(run, '/app//a.py/').lines.length, 5);
  assert.equal(lineAttribution(run, '/app/tmp').deleted, true);
});

test('decoration model: colour per line by reach, "step N" once per block, hover names the command', () => {
  const d = decorationModel(lineAttribution(run, '/app/a.py'));
  assert.deepEqual(d.map((x) => [x.line, x.kind, x.afterText]), [
    [0, 'reached', 'step 1'],
    [1, 'reached', undefined],
    [2, 'reached', 'step 0'],
    [3, 'reached', 'step 2'],
    [4, 'reached', 'step 0'],
  ]);
  assert.match(d[3].hover, /^written by step 2: sed -i '4s\/b\/B\/' \/app\/a\.py — reached E \(direct\)$/);
  const orig = decorationModel(lineAttribution(run, '/app/orig.py'));
  assert.deepEqual(orig.map((x) => [x.line, x.kind, x.afterText]), [[1, 'unreached', 'step 5']]);
  // The snapshot decides how many lines exist: decorations past its end are dropped.
  assert.equal(decorationModel(lineAttribution(run, '/app/a.py'), 2).length, 2);
});

test('changedFiles lists written paths in first-write order with their last state', () => {
  assert.deepEqual(changedFiles(steps).map((f) => [f.path, f.deleted, f.lastStep]), [
    ['/app/a.py', false, 2], ['/app/notes.txt', false, 3], ['/app/out.txt', false, 4], ['/app/orig.py', false, 5], ['/app/tmp', true, 6],
  ]);
});

test('snapshot copies changed files within the limits and says what it skipped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-snap-'));
  try {
    const content: Record<string, string> = { '/app/a.py': 'x\ny\na\nB\nc\n', '/app/notes.txt': 'n'.repeat(50), '/app/out.txt': 'o'.repeat(30) };
    const getArchive = async (p: string): Promise<Readable> => {
      if (!(p in content)) throw Object.assign(new Error(`Could not find the file ${p} in container`), { statusCode: 404 });
      return Readable.from([await singleFileTar(p.split('/').pop()!, Buffer.from(content[p]))]);
    };
    const index = await snapshotChangedFiles({ getArchive }, steps, dir, { fileBytes: 40, totalBytes: 50 });
    assert.deepEqual(index.files.map((f) => [f.path, f.bytes]), [['/app/a.py', 10], ['/app/out.txt', 30]]);
    assert.deepEqual(index.skipped.map((s) => s.path), ['/app/notes.txt', '/app/orig.py', '/app/tmp']);
    assert.match(index.skipped[0].reason, /per-file limit/);
    assert.match(index.skipped[1].reason, /no longer exists/);
    assert.match(index.skipped[2].reason, /deleted/);
    assert.equal(readFileSync(snapshotFilePath(dir, '/app/a.py')!, 'utf8'), content['/app/a.py']);
    assert.deepEqual(readSnapshotIndex(dir), index);
    // Container paths stay under files/: ".." past the root is the root, relative paths are refused.
    assert.equal(snapshotFilePath(dir, '/app/../../etc/passwd'), join(dir, 'files', 'etc', 'passwd'));
    assert.equal(snapshotFilePath(dir, '../x'), undefined);
    // A total limit that the second file would cross.
    const tight = await snapshotChangedFiles({ getArchive }, steps, dir, { fileBytes: 40, totalBytes: 20 });
    assert.deepEqual(tight.files.map((f) => f.path), ['/app/a.py']);
    assert.match(tight.skipped.find((s) => s.path === '/app/out.txt')!.reason, /snapshot limit/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
