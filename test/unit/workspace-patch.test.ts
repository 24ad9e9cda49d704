import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createTwoFilesPatch } from 'diff';
import { parseWorkspacePatch, planPatchOnFolder, planWorkspacePatch, writeChanges } from '../../src/core/run/workspace-patch';
import { TbrlError } from '../../src/core/errors';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-wpatch-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The same shape `workspacePatch` writes: a diff --git header, then the unified diff without the banner. */
function section(path: string, before: string | undefined, after: string | undefined): string {
  const header = `diff --git a/${path} b/${path}\n${before === undefined ? 'new file mode 100644\n' : after === undefined ? 'deleted file mode 100644\n' : ''}`;
  const body = createTwoFilesPatch(before === undefined ? '/dev/null' : `a/${path}`, after === undefined ? '/dev/null' : `b/${path}`, before ?? '', after ?? '');
  return header + body.split('\n').slice(1).join('\n');
}

const PATCH = section('src/a.txt', 'one\ntwo\nthree\n', 'one\n2\nthree\n') + section('new/b.txt', undefined, 'fresh\n') + section('old.txt', 'bye\n', undefined);

test('parses each file of a git-style patch with its kind', () => {
  assert.deepEqual(parseWorkspacePatch(PATCH).map((f) => [f.path, f.kind]), [['src/a.txt', 'modify'], ['new/b.txt', 'add'], ['old.txt', 'delete']]);
  assert.deepEqual(parseWorkspacePatch(''), []);
  assert.equal(parseWorkspacePatch('diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin differ\n')[0].kind, 'binary');
});

test('plans new contents, additions and deletions from the current files', () => {
  const files: Record<string, string> = { 'src/a.txt': 'one\ntwo\nthree\n', 'old.txt': 'bye\n' };
  const plan = planWorkspacePatch(parseWorkspacePatch(PATCH), (p) => files[p]);
  assert.deepEqual(plan.map((c) => [c.path, c.after]), [['src/a.txt', 'one\n2\nthree\n'], ['new/b.txt', 'fresh\n'], ['old.txt', null]]);
});

test('a patch that no longer fits is refused as a whole, naming the file', () => {
  const files: Record<string, string | undefined> = { 'src/a.txt': 'one\nTWO\nthree\n', 'old.txt': 'bye\n' };
  assert.throws(() => planWorkspacePatch(parseWorkspacePatch(PATCH), (p) => files[p]), (e: unknown) => e instanceof TbrlError && e.code === 'PATCH_CONFLICT' && /src\/a\.txt/.test(e.message));
  // Applied twice: the added file already exists.
  const applied = { 'src/a.txt': 'one\ntwo\nthree\n', 'old.txt': 'bye\n', 'new/b.txt': 'fresh\n' } as Record<string, string>;
  assert.throws(() => planWorkspacePatch(parseWorkspacePatch(PATCH), (p) => applied[p]), /already exists/);
});

test('paths that leave the workspace are refused', () => {
  for (const bad of ['../etc/passwd', '/etc/passwd', 'a/../../x']) {
    assert.throws(() => parseWorkspacePatch(section(bad, 'x\n', 'y\n')), (e: unknown) => e instanceof TbrlError && e.code === 'PATCH_PATH_OUTSIDE', bad);
  }
});

test('applies on a folder and never writes through a symlink that leads outside it', () => {
  const ws = join(scratch, 'ws');
  mkdirSync(join(ws, 'src'), { recursive: true });
  writeFileSync(join(ws, 'src/a.txt'), 'one\ntwo\nthree\n');
  writeFileSync(join(ws, 'old.txt'), 'bye\n');
  writeChanges(ws, planPatchOnFolder(ws, PATCH));
  assert.equal(readFileSync(join(ws, 'src/a.txt'), 'utf8'), 'one\n2\nthree\n');
  assert.equal(readFileSync(join(ws, 'new/b.txt'), 'utf8'), 'fresh\n');
  assert.equal(existsSync(join(ws, 'old.txt')), false);

  const outside = join(scratch, 'outside');
  mkdirSync(outside);
  symlinkSync(outside, join(ws, 'link'));
  assert.throws(() => planPatchOnFolder(ws, section('link/evil.txt', undefined, 'pwned\n')), (e: unknown) => e instanceof TbrlError && e.code === 'PATCH_PATH_OUTSIDE');
  assert.equal(existsSync(join(outside, 'evil.txt')), false);
});
