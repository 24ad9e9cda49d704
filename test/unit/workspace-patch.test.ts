import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createTwoFilesPatch } from 'diff';
import { execFileSync } from 'node:child_process';
import { changeText, parseWorkspacePatch, planPatchOnFolder, planWorkspacePatch, writeChanges } from '../../src/core/run/workspace-patch';
import { binaryPatchBody } from '../../src/core/sandbox/git-binary-patch';
import { gitignoreMatcher } from '../../src/core/sandbox/gitignore';
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

test('binary changes are full-index git binary patches: git apply --check passes and the planner applies the same bytes', () => {
  const ws = join(scratch, 'bin-ws');
  mkdirSync(ws, { recursive: true });
  const oldBytes = Buffer.from([0, 1, 2, 3, 255, 254, 0, 7]);
  const newBytes = Buffer.concat([Buffer.from([0, 9, 8]), Buffer.alloc(300, 0xab), Buffer.from('tail')]);
  writeFileSync(join(ws, 'data.bin'), oldBytes);
  writeFileSync(join(ws, 'gone.bin'), Buffer.from([0, 0, 1]));
  const patch = [
    `diff --git a/data.bin b/data.bin\n${binaryPatchBody(oldBytes, newBytes)}`,
    `diff --git a/img/new.png b/img/new.png\nnew file mode 100644\n${binaryPatchBody(undefined, Buffer.from([137, 80, 78, 71, 0, 1]))}`,
    `diff --git a/gone.bin b/gone.bin\ndeleted file mode 100644\n${binaryPatchBody(Buffer.from([0, 0, 1]), undefined)}`,
  ].join('');
  const patchFile = join(scratch, 'bin.patch');
  writeFileSync(patchFile, patch);
  const gitCopy = join(scratch, 'bin-git');
  mkdirSync(gitCopy);
  writeFileSync(join(gitCopy, 'data.bin'), oldBytes);
  writeFileSync(join(gitCopy, 'gone.bin'), Buffer.from([0, 0, 1]));
  execFileSync('git', ['apply', '--check', patchFile], { cwd: gitCopy });
  execFileSync('git', ['apply', patchFile], { cwd: gitCopy });
  assert.deepEqual(readFileSync(join(gitCopy, 'data.bin')), newBytes);

  const plan = planPatchOnFolder(ws, patch);
  assert.deepEqual(plan.map((c) => [c.path, c.kind]), [['data.bin', 'modify'], ['img/new.png', 'add'], ['gone.bin', 'delete']]);
  assert.match(changeText(plan[0].after), /^\(binary file, 307 bytes, git object [0-9a-f]{12}\)/);
  writeChanges(ws, plan);
  assert.deepEqual(readFileSync(join(ws, 'data.bin')), newBytes);
  assert.deepEqual(readFileSync(join(ws, 'img/new.png')), readFileSync(join(gitCopy, 'img/new.png')));
  assert.equal(existsSync(join(ws, 'gone.bin')), false);
  // A binary file that is no longer the run's starting point is a conflict, not an overwrite.
  assert.throws(() => planPatchOnFolder(ws, patch.split(/(?=diff --git a\/img)/)[0]), (e: unknown) => e instanceof TbrlError && e.code === 'PATCH_CONFLICT' && /data\.bin/.test(e.message));
});

test('writes exactly the plan that was shown: a file edited after planning refuses the whole write', () => {
  const ws = join(scratch, 'shown');
  mkdirSync(join(ws, 'src'), { recursive: true });
  writeFileSync(join(ws, 'src/a.txt'), 'one\ntwo\nthree\n');
  writeFileSync(join(ws, 'old.txt'), 'bye\n');
  const plan = planPatchOnFolder(ws, PATCH);
  writeFileSync(join(ws, 'src/a.txt'), 'one\ntwo\nthree\nedited while the diff was open\n');
  assert.throws(() => writeChanges(ws, plan), (e: unknown) => e instanceof TbrlError && e.code === 'PATCH_CONFLICT' && /src\/a\.txt changed after/.test(e.message));
  assert.equal(existsSync(join(ws, 'new/b.txt')), false, 'nothing was written');
  assert.equal(existsSync(join(ws, 'old.txt')), true);
});

test('.gitignore and the default cache list decide which paths a workspace patch holds', () => {
  const ignored = gitignoreMatcher(new Map([
    ['.gitignore', 'build/\n*.log\n!keep.log\n/top-only.txt\ndocs/**/*.tmp\n'],
    ['sub/.gitignore', 'local.txt\n'],
  ]));
  for (const p of ['__pycache__/m.cpython-311.pyc', 'pkg/__pycache__/x.pyc', 'a.pyc', 'node_modules/.cache/babel/x.json', '.git/index', '.pytest_cache/v/cache/nodeids',
    'build/out.o', 'src/build/x', 'err.log', 'top-only.txt', 'docs/a/b/c.tmp', 'sub/local.txt', 'sub/deeper/local.txt']) assert.equal(ignored(p), true, p);
  for (const p of ['src/main.py', 'keep.log', 'sub/top-only.txt', 'local.txt', 'node_modules/pkg/index.js', 'builder.py', 'docs/a.md', 'build.py']) assert.equal(ignored(p), false, p);
});
