import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { countLines, lineHunks, splitLines } from '../../src/core/trace/linediff';
import type { Hunk } from '../../src/core/trace/types';

/** Rebuilds `after` from `before` using only the hunks and the new content's lines they name. */
function applyHunks(before: string, after: string, hunks: Hunk[]): string {
  const a = splitLines(before);
  const b = splitLines(after);
  const out: string[] = [];
  let oldPos = 0; // old lines consumed
  for (const h of hunks) {
    const oldBefore = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    assert.ok(oldBefore >= oldPos, 'hunks are ordered and disjoint');
    out.push(...a.slice(oldPos, oldBefore));
    const newBefore = h.newLines === 0 ? h.newStart : h.newStart - 1;
    assert.equal(out.length, newBefore, 'newStart agrees with the lines kept so far');
    out.push(...b.slice(newBefore, newBefore + h.newLines));
    oldPos = oldBefore + h.oldLines;
  }
  out.push(...a.slice(oldPos));
  return out.join('');
}

test('identical content has no hunks', () => {
  assert.deepEqual(lineHunks('', ''), []);
  assert.deepEqual(lineHunks('a\nb\n', 'a\nb\n'), []);
});

test('writing three lines into an empty file is one insertion at the top', () => {
  assert.deepEqual(lineHunks('', 'x\ny\nz\n'), [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 3 }]);
});

test('appending keeps old lines and inserts after the last one', () => {
  assert.deepEqual(lineHunks('a\nb\n', 'a\nb\nc\n'), [{ oldStart: 2, oldLines: 0, newStart: 3, newLines: 1 }]);
});

test('a replaced middle line is one 1-for-1 hunk', () => {
  assert.deepEqual(lineHunks('a\nb\nc\n', 'a\nB\nc\n'), [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }]);
});

test('a deletion reports the new line after which lines vanished', () => {
  assert.deepEqual(lineHunks('a\nb\nc\n', 'a\nc\n'), [{ oldStart: 2, oldLines: 1, newStart: 1, newLines: 0 }]);
  assert.deepEqual(lineHunks('a\nb\n', ''), [{ oldStart: 1, oldLines: 2, newStart: 0, newLines: 0 }]);
});

test('two separate edits are two hunks', () => {
  const before = '1\n2\n3\n4\n5\n6\n';
  const after = '1\nX\n3\n4\n5\nY\nZ\n';
  assert.deepEqual(lineHunks(before, after), [
    { oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 },
    { oldStart: 6, oldLines: 1, newStart: 6, newLines: 2 },
  ]);
});

test('adding or removing the final newline changes only the last line', () => {
  assert.deepEqual(lineHunks('a\nb', 'a\nb\n'), [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }]);
  assert.deepEqual(lineHunks('a\nb\n', 'a\nb'), [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }]);
  // Appending to a file without a final newline extends its last line.
  assert.deepEqual(lineHunks('a\nb', 'a\nbc\nd\n'), [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 2 }]);
});

test('line counts include an unterminated last line', () => {
  assert.equal(countLines(''), 0);
  assert.equal(countLines('a'), 1);
  assert.equal(countLines('a\n'), 1);
  assert.equal(countLines('a\nb'), 2);
  assert.equal(countLines('\n\n'), 2);
  assert.equal(countLines('x\r\ny\r\n'), 2);
});

test('hunks always rebuild the new content (property)', () => {
  const content = fc
    .array(fc.constantFrom('a', 'b', 'c', '', 'dd'), { maxLength: 25 })
    .chain((lines) => fc.boolean().map((endNl) => lines.join('\n') + (endNl && lines.length ? '\n' : '')));
  fc.assert(
    fc.property(content, content, (before, after) => {
      const hunks = lineHunks(before, after);
      assert.equal(applyHunks(before, after, hunks), after);
      for (const h of hunks) assert.ok(h.oldLines + h.newLines > 0, 'no empty hunks');
      if (before === after) assert.deepEqual(hunks, []);
    }),
    { numRuns: 500 },
  );
});

test('a one-line edit in a 200k-line file is fast and exact', () => {
  const lines = Array.from({ length: 200_000 }, (_, i) => `line ${i}`);
  const before = lines.join('\n') + '\n';
  lines[123_456] = 'changed';
  const after = lines.join('\n') + '\n';
  const t0 = performance.now();
  const hunks = lineHunks(before, after);
  const ms = performance.now() - t0;
  assert.deepEqual(hunks, [{ oldStart: 123_457, oldLines: 1, newStart: 123_457, newLines: 1 }]);
  assert.ok(ms < 1000, `took ${ms} ms`);
});

test('a complete rewrite of a large file stays bounded and still rebuilds it', () => {
  const before = Array.from({ length: 50_000 }, (_, i) => `old ${i}`).join('\n') + '\n';
  const after = Array.from({ length: 50_000 }, (_, i) => `new ${i}`).join('\n') + '\n';
  const t0 = performance.now();
  const hunks = lineHunks(before, after);
  const ms = performance.now() - t0;
  assert.equal(applyHunks(before, after, hunks), after);
  assert.ok(ms < 3000, `took ${ms} ms`);
});

test('a scattered rewrite sharing some lines falls back within the time budget', () => {
  const before = Array.from({ length: 60_000 }, (_, i) => (i % 7 === 0 ? 'same' : `old ${i}`)).join('\n') + '\n';
  const after = Array.from({ length: 60_000 }, (_, i) => (i % 5 === 0 ? 'same' : `new ${i}`)).join('\n') + '\n';
  const t0 = performance.now();
  const hunks = lineHunks(before, after);
  const ms = performance.now() - t0;
  assert.equal(applyHunks(before, after, hunks), after);
  assert.ok(ms < 1500, `took ${ms} ms`);
});
