import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// scripts/tap-failures.mjs on what node's own tap reporter writes for a file with a failing
// assertion inside a suite, a test that times out, an error with quotes and two lines, and a passing
// test: CI keeps only the tail of the output, so scripts/test.mjs repeats these there.

type Failure = { name: string; location: string; thrownAt: string; error: string };
const load = async (): Promise<(tap: string) => Failure[]> =>
  ((await import(pathToFileURL(join(__dirname, '..', '..', 'scripts', 'tap-failures.mjs')).href)) as { tapFailures: (tap: string) => Failure[] }).tapFailures;

test('the failures of a real node --test TAP report: name, test line, thrown-from line and the error, without the suites that only hold them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-tap-'));
  try {
    const file = join(dir, 'test', 'sample.test.mjs');
    mkdirSync(join(dir, 'test'));
    writeFileSync(file, [
      "import { test, describe } from 'node:test';",
      "import assert from 'node:assert/strict';",
      "describe('outer', () => {",
      "  test('compares two counts', () => {",
      "    assert.equal(1 + 1, 3, 'the sum is off');",
      '  });',
      '});',
      "test('passes', () => {});",
      "test('waits too long', { timeout: 50 }, () => new Promise((r) => setTimeout(r, 600)));",
      "test('quotes \\'it\\'', () => { throw new Error(\"line one\\nline two: it's here\"); });",
    ].join('\n'));
    const tap = join(dir, 'out.tap');
    // Without NODE_TEST_CONTEXT, which would make the child report to this runner instead of the file.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT'));
    spawnSync(process.execPath, ['--test', '--test-reporter=tap', `--test-reporter-destination=${tap}`, file], { encoding: 'utf8', env });
    const failures = (await load())(readFileSync(tap, 'utf8'));

    assert.deepEqual(failures.map((f) => f.name), ['compares two counts', 'waits too long', "quotes 'it'"]);
    const [sum, slow, thrown] = failures;
    assert.match(sum.location, /sample\.test\.mjs:4:3$/);
    assert.match(sum.thrownAt, /sample\.test\.mjs:5:\d+\)?$/);
    assert.match(sum.error, /^the sum is off\n\n2 !== 3$/);
    assert.match(slow.error, /timed out after 50ms/);
    assert.match(thrown.error, /^line one\nline two: it's here$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a report with no failures, or no report at all, has none', async () => {
  const tapFailures = await load();
  assert.deepEqual(tapFailures('TAP version 13\nok 1 - fine\n  ---\n  duration_ms: 1\n  ...\n1..1\n# pass 1\n# fail 0\n'), []);
  assert.deepEqual(tapFailures(''), []);
});
