import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { applyEdit, applyEdits, decodeExactUtf8, looksBinary, nearestLines } from '../../src/core/actions/edit';
import { planGlob, matchGlob, findArgv, ignoreFilter } from '../../src/core/actions/glob';
import { boundText, wrapBounded, cutBytes } from '../../src/core/actions/bound';
import { renderRead } from '../../src/core/actions/view';
import { editDistance, closest } from '../../src/core/actions/suggest';
import { grepArgv } from '../../src/core/actions/handlers/search';

const e = (old_string: string, new_string: string, replace_all = false) => ({ old_string, new_string, replace_all });

describe('edit', () => {
  const src = 'def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n';

  test('replaces an exact multi-line string', () => {
    const r = applyEdit(src, e('def add(a, b):\n    return a - b\n', 'def add(a, b):\n    return a + b\n'));
    assert.ok(r.ok);
    assert.equal(r.content, 'def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n');
    assert.equal(r.replacements, 1);
  });

  test('not unique: fails, names the lines; replace_all replaces every one', () => {
    const r = applyEdit(src, e('    return a - b', '    return 0'));
    assert.equal(r.ok, false);
    assert.match((r as { problem: string }).problem, /not unique: it occurs 2 times \(starting at lines 2, 5\)/);
    assert.match((r as { problem: string }).problem, /replace_all: true/);
    const all = applyEdit(src, e('    return a - b', '    return 0', true));
    assert.ok(all.ok);
    assert.equal(all.replacements, 2);
    assert.equal(all.content, 'def add(a, b):\n    return 0\n\ndef sub(a, b):\n    return 0\n');
  });

  test('not found: shows the nearest lines with numbers', () => {
    const r = applyEdit(src, e('def sub(a,b):\n    return a-b', 'x'));
    assert.equal(r.ok, false);
    const p = (r as { problem: string }).problem;
    assert.match(p, /was not found/);
    assert.match(p, /4\tdef sub\(a, b\):/);
  });

  test('not found because of whitespace only: says so', () => {
    const r = applyEdit(src, e('def add(a, b):\n  return a - b', 'x'));
    assert.match((r as { problem: string }).problem, /spaces, tabs and indentation are ignored/);
    const inner = applyEdit(src, e('return a-b', 'x'));
    assert.match((inner as { problem: string }).problem, /spaces, tabs and indentation are ignored/);
    const real = applyEdit(src, e('return a * b', 'x'));
    assert.doesNotMatch((real as { problem: string }).problem, /ignored/);
  });

  test('CRLF files are edited with LF text and stay CRLF', () => {
    const r = applyEdit('a\r\nb\r\nc\r\n', e('a\nb\n', 'x\ny\n'));
    assert.ok(r.ok);
    assert.equal(r.content, 'x\r\ny\r\nc\r\n');
    assert.match(r.note!, /CRLF/);
  });

  test('a block scalar newline matches a last line without newline', () => {
    const r = applyEdit('first\nlast', e('last\n', 'LAST\n'));
    assert.ok(r.ok);
    assert.equal(r.content, 'first\nLAST');
  });

  test('replacement text is literal ($& and $1 are not patterns)', () => {
    const r = applyEdit('x = 1', e('1', '$&$1$$'));
    assert.ok(r.ok);
    assert.equal(r.content, 'x = $&$1$$');
  });

  test('multi_edit applies in order and is all or nothing', () => {
    const ok = applyEdits('a b c', [e('a', 'A'), e('A b', 'AB')]);
    assert.ok(ok.ok);
    assert.equal(ok.content, 'AB c');
    const bad = applyEdits('a b c', [e('a', 'A'), e('zzz', 'Z'), e('c', 'C')]);
    assert.equal(bad.ok, false);
    assert.equal((bad as { index: number }).index, 1);
    assert.match((bad as { problem: string }).problem, /edit 2 of 3 failed/);
  });

  test('property: a unique old_string is replaced exactly once and nothing else changes', () => {
    // X appears only in old_string, and old_string starts with it, so it occurs exactly once.
    const plain = fc.string({ unit: fc.constantFrom('a', 'b', '\n', ' ', 'é') });
    const mid = fc.string({ unit: fc.constantFrom('a', 'X', '\n') }).map((s) => `X${s}`);
    fc.assert(fc.property(plain, plain, mid, fc.string(), (pre, post, old, rep) => {
      fc.pre(rep !== old);
      const r = applyEdit(pre + old + post, e(old, rep));
      assert.ok(r.ok);
      assert.equal(r.content, pre + rep + post);
    }), { numRuns: 300 });
  });

  test('utf8 round trip and binary sniffing', () => {
    assert.equal(decodeExactUtf8(Buffer.from('héllo ✓')), 'héllo ✓');
    assert.equal(decodeExactUtf8(Buffer.from([0x68, 0xe9, 0x6c])), undefined);
    assert.equal(looksBinary(Buffer.from([1, 2, 0, 3])), true);
    assert.equal(looksBinary(Buffer.from('text')), false);
  });

  test('nearestLines finds nothing for unrelated text', () => {
    assert.equal(nearestLines('alpha\nbeta\n', 'zzzzqqq'), undefined);
  });
});

describe('glob', () => {
  const files = ['/app/a.py', '/app/src/b.py', '/app/src/deep/c.py', '/app/src/deep/d.ts', '/app/.hidden/e.py', '/app/README.md'];

  test('** crosses directories, * does not', () => {
    assert.deepEqual(matchGlob(files, planGlob('**/*.py', '/app')).matches, ['/app/a.py', '/app/src/b.py', '/app/src/deep/c.py']);
    assert.deepEqual(matchGlob(files, planGlob('src/*.py', '/app')).matches, ['/app/src/b.py']);
    assert.deepEqual(matchGlob(files, planGlob('src/**/*.ts', '/app')).matches, ['/app/src/deep/d.ts']);
  });

  test('patterns with / narrow the listing root; absolute patterns work', () => {
    assert.deepEqual(planGlob('src/**/*.ts', '/app'), { root: '/app/src', pattern: '**/*.ts' });
    assert.deepEqual(planGlob('/app/src/*.py', '/elsewhere'), { root: '/app/src', pattern: '*.py' });
    assert.deepEqual(planGlob('*.py', '/x', 'sub'), { root: '/x/sub', pattern: '*.py' });
    assert.deepEqual(matchGlob(files, planGlob('/app/src/deep/*', '/')).matches, ['/app/src/deep/c.py', '/app/src/deep/d.ts']);
  });

  test('a pattern without / that matches nothing at the top falls back to names at any depth', () => {
    const r = matchGlob(files, planGlob('*.ts', '/app'));
    assert.deepEqual(r, { matches: ['/app/src/deep/d.ts'], byBasename: true });
    assert.deepEqual(matchGlob(files, planGlob('*.md', '/app')), { matches: ['/app/README.md'], byBasename: false });
  });

  test('hidden entries only when the pattern asks for them', () => {
    assert.deepEqual(matchGlob(files, planGlob('.hidden/*.py', '/app')).matches, ['/app/.hidden/e.py']);
  });

  test('find argv prunes heavy dirs unless named', () => {
    assert.ok(findArgv('/app', '**/*.js').includes('node_modules'));
    assert.ok(!findArgv('/app', 'node_modules/**/*.js').includes('node_modules'));
    assert.equal(findArgv('/app', '*')[1], '/app/');
    assert.equal(findArgv('/', '*')[1], '/');
  });

  test('ls ignore patterns', () => {
    const ign = ignoreFilter(['*.pyc', '__pycache__']);
    assert.equal(ign('a.pyc'), true);
    assert.equal(ign('__pycache__'), true);
    assert.equal(ign('a.py'), false);
    assert.equal(ignoreFilter([])('x'), false);
  });
});

describe('bounds', () => {
  test('boundText keeps head and tail and says how much was dropped', () => {
    const t = `HEAD${'x'.repeat(10_000)}TAIL`;
    const b = boundText(t, 200);
    assert.ok(Buffer.byteLength(b.text) <= 200);
    assert.ok(b.text.startsWith('HEAD'));
    assert.ok(b.text.endsWith('TAIL'));
    assert.match(b.text, new RegExp(`\\[\\.\\.\\. ${b.droppedBytes} bytes omitted`));
    assert.equal(boundText('short', 200).droppedBytes, 0);
  });

  test('property: never over the bound, never a broken character, wrapper kept', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), fc.integer({ min: 0, max: 500 }), (s, max) => {
      const b = boundText(s, max);
      assert.ok(Buffer.byteLength(b.text) <= max);
      assert.ok(!b.text.includes('\uFFFD') || s.includes('\uFFFD'));
      const w = wrapBounded('bash_output', s, max);
      assert.ok(Buffer.byteLength(w) <= max);
      if (max >= 40) assert.ok(w.startsWith('<bash_output>\n') && w.endsWith('\n</bash_output>'));
      assert.ok(Buffer.byteLength(cutBytes(s, max)) <= max);
    }), { numRuns: 500 });
  });
});

describe('file read view', () => {
  test('numbered, windowed, with totals', () => {
    const v = renderRead('a\nb\nc\nd\n', 2, 2);
    assert.equal(v.text, '     2\tb\n     3\tc');
    assert.deepEqual([v.firstLine, v.lastLine, v.totalLines], [2, 3, 4]);
    assert.equal(renderRead('', undefined, undefined).totalLines, 0);
    assert.equal(renderRead('one', 0, undefined).text, '     1\tone');
  });
  test('long lines are cut and say so', () => {
    const v = renderRead('y'.repeat(5000));
    assert.match(v.text, /line cut at 2000 of 5000 characters/);
  });
});

describe('suggestions', () => {
  test('edit distance counts transpositions as one', () => {
    assert.equal(editDistance('grpe', 'grep'), 1);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(closest('timeout', ['cmd', 'timeout_secs']), 'timeout_secs');
    assert.equal(closest('zzz', ['cmd', 'block']), undefined);
  });
});

describe('grep argv', () => {
  test('ripgrep: sorted, line numbers, file names, include as a glob, pattern after -e, path after --', () => {
    const a = grepArgv(true, { action: 'grep', pattern: '-x', include: '*.py' }, '/app');
    assert.equal(a[0], 'rg');
    for (const f of ['--line-number', '--with-filename', '--no-heading', '--sort']) assert.ok(a.includes(f), f);
    assert.deepEqual(a.slice(a.indexOf('-g', a.indexOf('!.git')), a.indexOf('-g', a.indexOf('!.git')) + 2), ['-g', '*.py']);
    assert.deepEqual(a.slice(-4), ['-e', '-x', '--', '/app']);
  });
  test('grep fallback: recursive, numbered, ERE, --include', () => {
    const a = grepArgv(false, { action: 'grep', pattern: 'a|b', include: '*.ts' }, '/src');
    assert.deepEqual(a, ['grep', '-rnIHE', '--exclude-dir=.git', '--include=*.ts', '-e', 'a|b', '--', '/src']);
  });
});
