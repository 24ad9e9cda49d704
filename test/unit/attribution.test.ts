import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { lineAttribution, changedFiles } from '../../src/core/attribution/lines';
import { decorationModel } from '../../src/core/attribution/decorations';
import { snapshotChangedFiles, readSnapshotIndex, snapshotFilePath, originalFilePath, changedFileView, type SnapshotIndex } from '../../src/core/attribution/snapshot';
import { imageOriginals, originalImageOf, unknownOriginals, workspaceOriginals, type OriginalContent, type OriginalSource } from '../../src/core/attribution/originals';
import { holdSharedReaders } from '../../src/core/sandbox/shared-readers';
import type Docker from 'dockerode';
import { singleFileTar } from '../../src/core/sandbox/archive';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';
import type { FileWrite } from '../../src/core/trace/types';
import type { FileContent } from '../../src/core/trace/file-content';

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
    const index = await snapshotChangedFiles({ getArchive }, steps, dir, { limits: { fileBytes: 40, totalBytes: 50 } });
    assert.deepEqual(index.files.map((f) => [f.path, f.bytes]), [['/app/a.py', 10], ['/app/out.txt', 30]]);
    assert.deepEqual(index.skipped.map((s) => s.path), ['/app/notes.txt', '/app/orig.py', '/app/tmp']);
    assert.match(index.skipped[0].reason, /per-file limit/);
    assert.match(index.skipped[1].reason, /no longer exists/);
    assert.match(index.skipped[2].reason, /deleted/);
    assert.equal(readFileSync(snapshotFilePath(dir, '/app/a.py')!, 'utf8'), content['/app/a.py']);
    assert.deepEqual(readSnapshotIndex(dir), index);
    // Without a source of originals the index says nothing about them (as in runs made before they were kept).
    assert.ok(index.files.every((f) => f.original === undefined));
    assert.equal(existsSync(join(dir, 'originals')), false);
    // Container paths stay under files/: ".." past the root is the root, relative paths are refused.
    assert.equal(snapshotFilePath(dir, '/app/../../etc/passwd'), join(dir, 'files', 'etc', 'passwd'));
    assert.equal(snapshotFilePath(dir, '../x'), undefined);
    // A total limit that the second file would cross.
    const tight = await snapshotChangedFiles({ getArchive }, steps, dir, { limits: { fileBytes: 40, totalBytes: 20 } });
    assert.deepEqual(tight.files.map((f) => f.path), ['/app/a.py']);
    assert.match(tight.skipped.find((s) => s.path === '/app/out.txt')!.reason, /snapshot limit/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('snapshot through a sandbox that reads many files per round trip: the same index and files as one archive read each', async () => {
  const dirs = [mkdtempSync(join(tmpdir(), 'tbrl-snap-')), mkdtempSync(join(tmpdir(), 'tbrl-snap-'))];
  try {
    const content: Record<string, string> = { '/app/a.py': 'x\ny\na\nB\nc\n', '/app/notes.txt': 'n'.repeat(50), '/app/out.txt': 'o'.repeat(30) };
    const getArchive = async (p: string): Promise<Readable> => {
      if (!(p in content)) throw Object.assign(new Error(`Could not find the file ${p} in container`), { statusCode: 404 });
      return Readable.from([await singleFileTar(p.split('/').pop()!, Buffer.from(content[p]))]);
    };
    const batches: string[][] = [];
    const readFiles = async (paths: readonly string[]): Promise<PromiseSettledResult<FileContent>[]> => {
      batches.push([...paths]);
      return paths.map((p): PromiseSettledResult<FileContent> => (p === '/app/orig.py' ? { status: 'rejected', reason: new Error('not a directory') } : { status: 'fulfilled', value: p in content ? { kind: 'file', content: Buffer.from(content[p]) } : { kind: 'absent' } }));
    };
    const limits = { fileBytes: 40, totalBytes: 50 };
    // One path the daemon refuses (a path under a file): it alone "could not be read", in both.
    const refusing = async (p: string): Promise<Readable> => (p === '/app/orig.py' ? Promise.reject(new Error('not a directory')) : getArchive(p));
    const one = await snapshotChangedFiles({ getArchive: refusing }, steps, dirs[0], { limits });
    const many = await snapshotChangedFiles({ getArchive: () => Promise.reject(new Error('not used')), readFiles }, steps, dirs[1], { limits });
    assert.deepEqual(many, one);
    assert.match(many.skipped.find((x) => x.path === '/app/orig.py')!.reason, /could not be read: not a directory/);
    assert.equal(readFileSync(snapshotFilePath(dirs[1], '/app/a.py')!, 'utf8'), content['/app/a.py']);
    // One round trip for the four files still there (the deleted one is not read).
    assert.deepEqual(batches, [['/app/a.py', '/app/notes.txt', '/app/out.txt', '/app/orig.py']]);
    // A failing batch is that batch's files' "could not be read", as a failing archive read was.
    const failing = await snapshotChangedFiles({ getArchive, readFiles: () => Promise.reject(new Error('reader gone')) }, steps, dirs[1], { limits });
    assert.deepEqual(failing.files, []);
    assert.ok(failing.skipped.filter((s) => !/deleted/.test(s.reason)).every((s) => /could not be read: reader gone/.test(s.reason)));
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});

/** Final contents served like a container's archive; originals from a map, absent when not in it. */
function fakeRun(final: Record<string, string>, original: Record<string, OriginalContent>) {
  const getArchive = async (p: string): Promise<Readable> => {
    if (!(p in final)) throw Object.assign(new Error(`Could not find the file ${p} in container`), { statusCode: 404 });
    return Readable.from([await singleFileTar(p.split('/').pop()!, Buffer.from(final[p]))]);
  };
  const read: string[] = [];
  const originals: OriginalSource = {
    read: async (p) => {
      read.push(p);
      return original[p] ?? { kind: 'absent' };
    },
    close: async () => {},
  };
  return { sandbox: { getArchive }, originals, read };
}

test('snapshot keeps each saved file\'s original: stored, absent (created) or skipped with the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-orig-'));
  try {
    const final = { '/app/a.py': 'x\ny\na\nB\nc\n', '/app/notes.txt': 'n1\nn2\n', '/app/out.txt': '2\n', '/app/orig.py': 'a\nz\nc\n' };
    const { sandbox, originals, read } = fakeRun(final, {
      '/app/a.py': { kind: 'other', why: 'directory' },
      '/app/orig.py': { kind: 'file', content: Buffer.from('a\nb\nc\n') },
      '/app/out.txt': { kind: 'unknown', why: '/app is bind-mounted' },
    });
    const index = await snapshotChangedFiles(sandbox, steps, dir, { originals });
    // Only files whose final content was saved get an original; the deleted /app/tmp is not read.
    assert.deepEqual(read, ['/app/a.py', '/app/notes.txt', '/app/out.txt', '/app/orig.py']);
    const byPath = Object.fromEntries(index.files.map((f) => [f.path, f.original]));
    assert.deepEqual(byPath['/app/orig.py'], { status: 'stored', bytes: 6 });
    assert.deepEqual(byPath['/app/notes.txt'], { status: 'absent' });
    assert.deepEqual(byPath['/app/a.py'], { status: 'skipped', reason: 'not a regular file in the image (directory)' });
    assert.deepEqual(byPath['/app/out.txt'], { status: 'skipped', reason: '/app is bind-mounted' });
    assert.equal(readFileSync(originalFilePath(dir, '/app/orig.py')!, 'utf8'), 'a\nb\nc\n');
    // The final content stays where it was; absent originals leave no file.
    assert.equal(readFileSync(snapshotFilePath(dir, '/app/orig.py')!, 'utf8'), final['/app/orig.py']);
    assert.equal(existsSync(originalFilePath(dir, '/app/notes.txt')!), false);
    assert.deepEqual(readSnapshotIndex(dir), index);

    assert.deepEqual(changedFileView(index, '/app/orig.py'), { kind: 'diff', original: 'stored' });
    assert.deepEqual(changedFileView(index, '/app/notes.txt'), { kind: 'diff', original: 'empty' });
    assert.deepEqual(changedFileView(index, '/app/out.txt'), { kind: 'alone', why: 'its original was not kept: /app is bind-mounted' });
    assert.deepEqual(changedFileView(index, '/app/tmp'), { kind: 'missing', why: 'deleted by the agent' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('originals count into the snapshot limits, after every final content', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-orig-limit-'));
  try {
    const final = { '/app/a.py': 'a'.repeat(10), '/app/notes.txt': 'n'.repeat(10), '/app/out.txt': 'o'.repeat(10), '/app/orig.py': 'p'.repeat(10) };
    const { sandbox, originals } = fakeRun(final, {
      '/app/a.py': { kind: 'file', content: Buffer.from('A'.repeat(41)) },
      '/app/notes.txt': { kind: 'file', content: Buffer.from('N'.repeat(15)) },
      '/app/orig.py': { kind: 'file', content: Buffer.from('P'.repeat(15)) },
    });
    const index = await snapshotChangedFiles(sandbox, steps, dir, { originals, limits: { fileBytes: 40, totalBytes: 60 } });
    // 40 bytes of final content first; then notes' 15 fit (55), orig's 15 would not (70).
    assert.deepEqual(index.files.map((f) => f.path), ['/app/a.py', '/app/notes.txt', '/app/out.txt', '/app/orig.py']);
    const byPath = Object.fromEntries(index.files.map((f) => [f.path, f.original]));
    assert.match((byPath['/app/a.py'] as { reason: string }).reason, /^41 bytes, over the 40-byte per-file limit$/);
    assert.deepEqual(byPath['/app/notes.txt'], { status: 'stored', bytes: 15 });
    assert.match((byPath['/app/orig.py'] as { reason: string }).reason, /exceed the 60-byte snapshot limit/);
    assert.equal(existsSync(originalFilePath(dir, '/app/orig.py')!), false);
    assert.equal(existsSync(originalFilePath(dir, '/app/a.py')!), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a source that cannot read originals leaves the final contents and says why per file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-orig-fail-'));
  try {
    const { sandbox } = fakeRun({ '/app/a.py': 'a\n' }, {});
    const failing: OriginalSource = { read: async () => { throw new Error('the image img:1 the run started from no longer exists'); }, close: async () => {} };
    const index = await snapshotChangedFiles(sandbox, steps, dir, { originals: failing });
    assert.deepEqual(index.files.map((f) => [f.path, f.original]), [['/app/a.py', { status: 'skipped', reason: 'could not be read: the image img:1 the run started from no longer exists' }]]);
    assert.equal(readFileSync(snapshotFilePath(dir, '/app/a.py')!, 'utf8'), 'a\n');
    const unknown = await snapshotChangedFiles(sandbox, steps, dir, { originals: unknownOriginals('root image not recorded') });
    assert.equal(changedFileView(unknown, '/app/a.py').kind, 'alone');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A daemon whose originals containers serve `image` like the archive API (404 for a missing path), counting every call. */
function fakeImageDaemon(image: Record<string, string>) {
  const calls: string[] = [];
  let failNext = 0;
  const container = {
    getArchive: async ({ path }: { path: string }): Promise<Readable> => {
      calls.push(`archive ${path}`);
      if (failNext > 0) {
        failNext--;
        throw Object.assign(new Error('(HTTP code 500) server error - daemon busy'), { statusCode: 500 });
      }
      if (!(path in image)) throw Object.assign(new Error(`(HTTP code 404) no such container - Could not find the file ${path} in container x`), { statusCode: 404 });
      return Readable.from([await singleFileTar(path.split('/').pop()!, Buffer.from(image[path]))]);
    },
    remove: async () => void calls.push('remove'),
  };
  const docker = { createContainer: async () => (calls.push('create'), container) } as unknown as Docker;
  return { docker, calls, failOnce: () => void (failNext = 1) };
}

test("an eval job's runs of one image read each path's original from the daemon once: a created file's 404 is not asked again, and every run gets the same originals", async () => {
  const dirs = [0, 1, 2].map((i) => mkdtempSync(join(tmpdir(), `tbrl-orig-cache-${i}-`)));
  const release = holdSharedReaders();
  try {
    const final = { '/app/a.py': 'x\ny\na\nB\nc\n', '/app/notes.txt': 'n1\nn2\n', '/app/out.txt': '2\n', '/app/orig.py': 'a\nz\nc\n' };
    const daemon = fakeImageDaemon({ '/app/orig.py': 'a\nb\nc\n' });
    const image = { name: 'task:1', id: 'sha256:1' };
    const indexes: SnapshotIndex[] = [];
    for (const dir of dirs) {
      const originals = imageOriginals(daemon.docker, image, 'run');
      indexes.push(await snapshotChangedFiles(fakeRun(final, {}).sandbox, steps, dir, { originals }));
      await originals.close();
    }
    // One container for the job, one archive call per path: the created files' 404s and the kept file come from the first run's answers.
    assert.deepEqual(daemon.calls, ['create', 'archive /app/a.py', 'archive /app/notes.txt', 'archive /app/out.txt', 'archive /app/orig.py']);
    for (const index of indexes) {
      assert.deepEqual(Object.fromEntries(index.files.map((f) => [f.path, f.original])), {
        '/app/a.py': { status: 'absent' },
        '/app/notes.txt': { status: 'absent' },
        '/app/out.txt': { status: 'absent' },
        '/app/orig.py': { status: 'stored', bytes: 6 },
      });
    }
    for (const dir of dirs) assert.equal(readFileSync(originalFilePath(dir, '/app/orig.py')!, 'utf8'), 'a\nb\nc\n');
    // A failed read is not kept: the next run asks the daemon again and gets the answer.
    const other = fakeImageDaemon({ '/app/orig.py': 'a\nb\nc\n' });
    other.failOnce();
    const first = imageOriginals(other.docker, { name: 'task:2' }, 'run');
    await assert.rejects(first.read('/app/orig.py'), /daemon busy/);
    const second = imageOriginals(other.docker, { name: 'task:2' }, 'run');
    assert.deepEqual(await second.read('/app/orig.py'), { kind: 'file', content: Buffer.from('a\nb\nc\n') });
    assert.equal(other.calls.filter((c) => c.startsWith('archive')).length, 2);
    await Promise.all([first.close(), second.close()]);
  } finally {
    await release();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
});

test('changedFileView: runs without originals or without a snapshot say why there is no diff', () => {
  const old: SnapshotIndex = { version: 1, files: [{ path: '/app/a.py', bytes: 3, lastStep: 0 }], skipped: [{ path: '/app/big', reason: 'over the limit' }] };
  assert.deepEqual(changedFileView(old, '/app/a.py'), { kind: 'alone', why: 'the run was made before the original content of changed files was kept' });
  assert.deepEqual(changedFileView(old, '/app/big'), { kind: 'missing', why: 'over the limit' });
  assert.equal(changedFileView(undefined, '/app/a.py').kind, 'missing');
  assert.match((changedFileView(old, '/app/other') as { why: string }).why, /no traced command/);
});

test('a copied-in workspace takes its originals from the host folder; a bind-mounted one has none', async () => {
  const host = mkdtempSync(join(tmpdir(), 'tbrl-orig-ws-'));
  try {
    mkdirSync(join(host, 'src'));
    writeFileSync(join(host, 'src/main.py'), 'print(1)\n');
    const image: OriginalSource = { read: async (p) => ({ kind: 'file', content: Buffer.from(`image:${p}`) }), close: async () => {} };
    const copy = workspaceOriginals(image, { hostPath: host, containerPath: '/workspaces/proj/', mode: 'copy' });
    assert.deepEqual(await copy.read('/workspaces/proj/src/main.py'), { kind: 'file', content: Buffer.from('print(1)\n') });
    assert.deepEqual(await copy.read('/workspaces/proj/src/new.py'), { kind: 'absent' });
    assert.deepEqual(await copy.read('/workspaces/proj/src'), { kind: 'other', why: 'directory' });
    // Outside the workspace (and a sibling folder whose name only starts the same) comes from the image.
    assert.deepEqual(await copy.read('/etc/hosts'), { kind: 'file', content: Buffer.from('image:/etc/hosts') });
    assert.deepEqual(await copy.read('/workspaces/project2/x'), { kind: 'file', content: Buffer.from('image:/workspaces/project2/x') });
    const bind = workspaceOriginals(image, { hostPath: host, containerPath: '/workspaces/proj', mode: 'bind' });
    const r = await bind.read('/workspaces/proj/src/main.py');
    assert.equal(r.kind, 'unknown');
    assert.match((r as { why: string }).why, /bind-mounted/);
  } finally {
    rmSync(host, { recursive: true, force: true });
  }
});

test('originalImageOf: a fork inherits the root image, also through forks written before the field existed', async () => {
  const root = { ...header, sandbox: { image: 'tbrl-task/hello:abc', tracing: { available: true } } } as TrajectoryHeader;
  const fork1 = { ...header, sandbox: { image: 'sha256:checkpoint1', tracing: { available: true } }, forkedFrom: { runId: 'root', step: 1, trajectory: '/runs/root/trajectory.jsonl' } } as TrajectoryHeader;
  const fork2 = { ...header, sandbox: { image: 'sha256:checkpoint2', tracing: { available: true } }, forkedFrom: { runId: 'f1', step: 0, trajectory: '/runs/f1/trajectory.jsonl' } } as TrajectoryHeader;
  const headers: Record<string, TrajectoryHeader> = { '/runs/root/trajectory.jsonl': root, '/runs/f1/trajectory.jsonl': fork1 };
  const readHeader = async (p: string) => headers[p];
  assert.deepEqual(await originalImageOf(root, readHeader), { name: 'tbrl-task/hello:abc' });
  assert.deepEqual(await originalImageOf(fork2, readHeader), { name: 'tbrl-task/hello:abc' });
  // Recorded: taken as is, no reading back.
  const recorded = { ...fork2, sandbox: { ...fork2.sandbox!, originalImage: { name: 'tbrl-task/hello:abc', id: 'sha256:root' } } };
  assert.deepEqual(await originalImageOf(recorded, async () => { throw new Error('must not read'); }), { name: 'tbrl-task/hello:abc', id: 'sha256:root' });
  // A broken chain is unknown rather than the checkpoint.
  assert.equal(await originalImageOf(fork2, async () => undefined), undefined);
  assert.equal(await originalImageOf({ ...fork1, forkedFrom: { runId: 'root', step: 1 } }, readHeader), undefined);
});
