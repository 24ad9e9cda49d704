import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveWrites } from '../../src/core/trace/writes';
import { toVerifierTrace } from '../../src/core/trace/traced-sandbox';
import type { FileContent } from '../../src/core/trace/file-content';

const file = (s: string): FileContent => ({ kind: 'file', content: Buffer.from(s) });
const absent: FileContent = { kind: 'absent' };

function fakeFs(map: Record<string, FileContent>) {
  return async (paths: readonly string[]) => paths.map((p) => map[p] ?? absent);
}

test('before/after contents become created, changed, identical, deleted writes; temp files and directories vanish', async () => {
  const before = fakeFs({ '/a': file('1\n2\n'), '/same': file('x\n'), '/gone': file('g\n'), '/d': { kind: 'other', why: 'directory' } });
  const after = fakeFs({ '/a': file('1\nTWO\n'), '/same': file('x\n'), '/new': file('n1\nn2'), '/d': { kind: 'other', why: 'directory' }, '/big': { kind: 'other', why: 'larger than 16777216 bytes' } });
  const remembered: string[] = [];
  const r = await resolveWrites(['/a', '/same', '/new', '/gone', '/tmp-renamed-away', '/d', '/big', '/a'], after, before, 100, (p) => remembered.push(p));
  assert.deepEqual(r.writes, [
    { path: '/a', hunks: [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }], linesAfter: 2 },
    { path: '/same', hunks: [], linesAfter: 1 },
    { path: '/new', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], linesAfter: 2, created: true },
    { path: '/gone', hunks: [{ oldStart: 1, oldLines: 1, newStart: 0, newLines: 0 }], deleted: true, linesAfter: 0 },
  ]);
  assert.match(r.notes.join(';'), /not diffed: \/big \(larger than/);
  assert.equal(remembered.length, 7, 'each distinct path is remembered once as the next "before"');
});

test('the per-command file cap is reported, not silently applied', async () => {
  const paths = Array.from({ length: 5 }, (_, i) => `/f${i}`);
  const r = await resolveWrites(paths, fakeFs({}), fakeFs({}), 2);
  assert.match(r.notes[0], /3 written files beyond the cap of 2 were not diffed: \/f2, \/f3, \/f4/);
});

test('a failing reader marks the trace incomplete instead of throwing', async () => {
  const r = await resolveWrites(['/x'], async () => { throw new Error('daemon gone'); }, fakeFs({}), 10);
  assert.deepEqual(r.writes, []);
  assert.match(r.notes[0], /could not be read: daemon gone/);
});

test('verifier trace: probed ports (refused too), inspected processes, its own writes listed for exclusion', () => {
  const v = toVerifierTrace({
    reads: ['/app/out.txt'],
    writes: [{ path: '/tmp/report.xml', hunks: [], linesAfter: 3, created: true }],
    stdoutValues: [],
    ports: [9000],
    processes: ['77:python3'],
    probedPorts: [8080, 9000],
    inspectedProcesses: ['42:nginx'],
  });
  assert.deepEqual(v, { reads: ['/app/out.txt'], writes: ['/tmp/report.xml'], ports: [8080, 9000], processes: ['42:nginx'] });
});
