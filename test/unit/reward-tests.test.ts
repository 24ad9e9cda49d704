import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePytestOutput, statusPasses, taskRelativeNodeId } from '../../src/core/reward/pytest-summary';
import { scoreTests, nameForms } from '../../src/core/reward/weights';
import { TbrlError } from '../../src/core/errors';
import { resolve } from 'node:path';
import { runTests } from '../../src/core/reward/tests';
import { loadTask } from '../../src/core/tasks/load';
import type { Sandbox } from '../../src/core/sandbox/types';

// Captured from pytest 9.2 (-rA --color=yes) on a file with a class, parametrised ids holding
// " - ", a skip, xfail, xpass, strict xpass, a fixture error and plain failures.
const COLOURED = '\x1b[36m\x1b[1m=========================== short test summary info ============================\x1b[0m\n\x1b[32mPASSED\x1b[0m test_x.py::\x1b[1mTestGroup::test_method\x1b[0m\n\x1b[32mPASSED\x1b[0m test_x.py::\x1b[1mtest_param[1-x - y]\x1b[0m\n\x1b[33mSKIPPED\x1b[0m [1] test_x.py:10: not today\n\x1b[33mXFAIL\x1b[0m test_x.py::\x1b[1mtest_xf\x1b[0m\n\x1b[33mXPASS\x1b[0m test_x.py::\x1b[1mtest_xp\x1b[0m\n\x1b[31mERROR\x1b[0m test_x.py::\x1b[1mtest_err\x1b[0m - RuntimeError: fixture broke\n\x1b[31mFAILED\x1b[0m test_x.py::\x1b[1mtest_param[2-z]\x1b[0m - assert 2 == 1\n\x1b[31mFAILED\x1b[0m test_x.py::\x1b[1mtest_fail\x1b[0m - AssertionError: boom\n\x1b[31mFAILED\x1b[0m test_x.py::\x1b[1mtest_xp_strict\x1b[0m - [XPASS(strict)] \n\x1b[31m==== \x1b[31m\x1b[1m3 failed\x1b[0m, \x1b[32m2 passed\x1b[0m, \x1b[33m1 skipped\x1b[0m, \x1b[33m1 xfailed\x1b[0m, \x1b[33m1 xpassed\x1b[0m, \x1b[31m\x1b[1m1 error\x1b[0m\x1b[31m in 0.07s\x1b[0m\x1b[31m =====\x1b[0m\n';

const statusOf = (out: string) => Object.fromEntries(parsePytestOutput(out).results.map((r) => [r.nodeId, r.status]));

test('coloured -rA summary: ANSI stripped, classes, parametrised ids with spaces, every status', () => {
  const p = parsePytestOutput(COLOURED);
  assert.equal(p.summaryFound, true);
  assert.equal(p.finalLineFound, true);
  assert.deepEqual(statusOf(COLOURED), {
    'test_x.py::TestGroup::test_method': 'passed',
    'test_x.py::test_param[1-x - y]': 'passed',
    'test_x.py:10': 'skipped',
    'test_x.py::test_xf': 'xfail',
    'test_x.py::test_xp': 'xpass',
    'test_x.py::test_err': 'error',
    'test_x.py::test_param[2-z]': 'failed',
    'test_x.py::test_fail': 'failed',
    'test_x.py::test_xp_strict': 'failed',
  });
  assert.equal(p.results.find((r) => r.nodeId === 'test_x.py::test_fail')?.message, 'AssertionError: boom');
});

test('pass/fail semantics follow Terminal-Bench: skipped and xfail pass, xpass and error fail', () => {
  assert.deepEqual(
    (['passed', 'xfail', 'skipped', 'failed', 'error', 'xpass'] as const).map(statusPasses),
    [true, true, true, false, false, false],
  );
});

test('-v progress lines name a skipped test the summary only gives by file:line', () => {
  const out = [
    'test_x.py::test_a PASSED                                 [ 33%]',
    'test_x.py::test_skip SKIPPED (not today)                 [ 66%]',
    'test_x.py::test_b FAILED                                 [100%]',
    '=========================== short test summary info ============================',
    'PASSED test_x.py::test_a',
    'SKIPPED [1] test_x.py:10: not today',
    'FAILED test_x.py::test_b - assert 0',
    '==================== 1 failed, 1 passed, 1 skipped in 0.02s ====================',
  ].join('\r\n');
  assert.deepEqual(statusOf(out), { 'test_x.py::test_a': 'passed', 'test_x.py::test_b': 'failed', 'test_x.py::test_skip': 'skipped' });
});

test('a test reported PASSED and then ERROR at teardown counts as error', () => {
  const out = '=== short test summary info ===\nPASSED t.py::test_a\nERROR t.py::test_a - teardown boom\n=== 1 passed, 1 error in 0.1s ===';
  assert.deepEqual(statusOf(out), { 't.py::test_a': 'error' });
});

test('two pytest runs in one script: both summaries are read', () => {
  const out = '== short test summary info ==\nPASSED a.py::test_1\n== 1 passed in 0.1s ==\nnoise\n== short test summary info ==\nFAILED b.py::test_2 - x\n== 1 failed in 0.1s ==';
  assert.deepEqual(statusOf(out), { 'a.py::test_1': 'passed', 'b.py::test_2': 'failed' });
});

test('no summary: output of a runner that never reached pytest, and a run without -rA', () => {
  const crash = parsePytestOutput('bash: pytest: command not found\n');
  assert.equal(crash.summaryFound, false);
  assert.equal(crash.results.length, 0);
  const quiet = parsePytestOutput('..\n============================== 2 passed in 0.01s ===============================\n');
  assert.equal(quiet.summaryFound, false);
  assert.equal(quiet.finalLineFound, true);
  assert.equal(quiet.results.length, 0);
});

test('summary lines from captured test output outside the section are not taken as results', () => {
  const out = '----- Captured stdout call -----\nPASSED fake.py::test_injected\n=== short test summary info ===\nFAILED t.py::test_real - no\n=== 1 failed in 0.1s ===';
  assert.deepEqual(statusOf(out), { 't.py::test_real': 'failed' });
});

const r = (nodeId: string, status: 'passed' | 'failed' | 'error' | 'skipped' | 'xfail' | 'xpass') => ({ nodeId, status });

test('weights 0.5/0.3/0.2 with the first and third passing score exactly 0.7', () => {
  const { score, outcomes } = scoreTests(
    [r('tests/test_outputs.py::test_a', 'passed'), r('tests/test_outputs.py::test_b', 'failed'), r('tests/test_outputs.py::test_c', 'passed')],
    { test_a: 0.5, test_b: 0.3, test_c: 0.2 },
  );
  assert.equal(score, 0.7);
  assert.deepEqual(outcomes.map((o) => [o.name, o.status, o.weight]), [
    ['tests/test_outputs.py::test_a', 'passed', 0.5],
    ['tests/test_outputs.py::test_b', 'failed', 0.3],
    ['tests/test_outputs.py::test_c', 'passed', 0.2],
  ]);
});

test('weights that do not sum to 1 are normalised: Σ w·passed / Σ w', () => {
  const { score } = scoreTests([r('t.py::test_a', 'passed'), r('t.py::test_b', 'failed')], { test_a: 3, test_b: 1 });
  assert.equal(score, 0.75);
});

test('a weighted test that did not run counts as failed with status not-run', () => {
  const { score, outcomes } = scoreTests([r('t.py::test_a', 'passed')], { test_a: 0.4, test_b: 0.6 });
  assert.equal(score, 0.4);
  assert.deepEqual(outcomes.find((o) => o.name === 'test_b'), { name: 'test_b', status: 'not-run', weight: 0.6 });
});

test('weights whose names match no test that ran are a typed task error, not equal weights', () => {
  assert.throws(
    () => scoreTests([r('t.py::test_x', 'passed'), r('t.py::test_y', 'passed')], { hello_file_exists: 0.5, hello_file_content: 0.5 }),
    (err: unknown) => err instanceof TbrlError && err.code === 'reward.weights-mismatch' && /test_x/.test(err.message) && /"test_x": 0.50/.test(err.message),
  );
});

test('weight keys may drop the test_ prefix, name the class path or the full node id', () => {
  assert.deepEqual(nameForms('tests/t.py::TestG::test_m'), ['tests/t.py::TestG::test_m', 'TestG::test_m', 'test_m', 'm']);
  const { score } = scoreTests(
    [r('tests/t.py::test_hello_file_exists', 'passed'), r('tests/t.py::TestG::test_m', 'failed'), r('tests/t.py::test_full', 'passed')],
    { hello_file_exists: 0.5, 'TestG::test_m': 0.25, 'tests/t.py::test_full': 0.25 },
  );
  assert.equal(score, 0.75);
});

test('a weight on a parametrised function is shared equally by its instances', () => {
  const { score, outcomes } = scoreTests(
    [r('t.py::test_p[1]', 'passed'), r('t.py::test_p[2]', 'failed'), r('t.py::test_p[3]', 'passed'), r('t.py::test_q', 'passed')],
    { test_p: 0.6, test_q: 0.4 },
  );
  assert.equal(score, 0.8);
  assert.equal(outcomes.filter((o) => o.name.startsWith('t.py::test_p')).length, 3);
  assert.ok(outcomes.filter((o) => o.name.startsWith('t.py::test_p')).every((o) => Math.abs(o.weight - 0.2) < 1e-12));
});

test('tests without a weight are recorded with weight 0 and do not move the score', () => {
  const { score, outcomes } = scoreTests([r('t.py::test_a', 'failed'), r('t.py::test_extra', 'passed')], { test_a: 1 });
  assert.equal(score, 0);
  assert.deepEqual(outcomes.find((o) => o.name === 't.py::test_extra'), { name: 't.py::test_extra', status: 'passed', weight: 0 });
});

test('a collection error with weights: every weighted test is not-run and the score is 0', () => {
  const { score, outcomes } = scoreTests([r('tests/test_outputs.py', 'error')], { test_a: 0.5, test_b: 0.5 });
  assert.equal(score, 0);
  assert.deepEqual(outcomes.map((o) => o.status), ['not-run', 'not-run', 'error']);
});

test('without weights every test weighs the same; skipped and xfail pass', () => {
  const { score, outcomes } = scoreTests([r('t::a', 'passed'), r('t::b', 'skipped'), r('t::c', 'xfail'), r('t::d', 'xpass')]);
  assert.equal(score, 0.75);
  assert.ok(outcomes.every((o) => o.weight === 0.25));
});

test('invalid weights are rejected with the offending key', () => {
  assert.throws(() => scoreTests([r('t::test_a', 'passed')], { test_a: 0.5, test_b: 'Hello' as unknown as number }), /reward|test_b/);
  assert.throws(() => scoreTests([r('t::test_a', 'passed')], { test_a: 0 }), (e: unknown) => e instanceof TbrlError && e.code === 'reward.bad-weights');
});

test('a collection error is an error entry named by its file, with the final line found', () => {
  const out = [
    '==================================== ERRORS ====================================',
    '___________________ ERROR collecting tests/test_outputs.py ____________________',
    "E   ModuleNotFoundError: No module named 'requests'",
    '=========================== short test summary info ============================',
    "ERROR tests/test_outputs.py - ModuleNotFoundError: No module named 'requests'",
    '!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!',
    '=============================== 1 error in 0.05s ===============================',
  ].join('\n');
  const p = parsePytestOutput(out);
  assert.equal(p.finalLineFound, true);
  assert.deepEqual(p.results, [{ nodeId: 'tests/test_outputs.py', status: 'error', message: "ModuleNotFoundError: No module named 'requests'" }]);
  assert.equal(scoreTests(p.results).score, 0);
});

test('node ids are named relative to the task: ../tests/ and /tests/ become tests/, others are kept', () => {
  assert.equal(taskRelativeNodeId('../tests/test_outputs.py::test_x', '/tests'), 'tests/test_outputs.py::test_x');
  assert.equal(taskRelativeNodeId('../../tests/sub/test_a.py::TestK::test_y[a b]', '/tests'), 'tests/sub/test_a.py::TestK::test_y[a b]');
  assert.equal(taskRelativeNodeId('/tests/test_outputs.py::test_x', '/tests'), 'tests/test_outputs.py::test_x');
  assert.equal(taskRelativeNodeId('../tests/test_x.py:14', '/tests'), 'tests/test_x.py:14');
  assert.equal(taskRelativeNodeId('../verifier/test_outputs.py::t', '/verifier/', 'tests'), 'tests/test_outputs.py::t');
  assert.equal(taskRelativeNodeId('tests/test_outputs.py::test_x', '/tests'), 'tests/test_outputs.py::test_x');
  assert.equal(taskRelativeNodeId('../other/test_x.py::t', '/tests'), '../other/test_x.py::t');
  assert.equal(taskRelativeNodeId('test_outputs.py::test_x', '/tests'), 'test_outputs.py::test_x');
});

/**
 * A sandbox whose execs outside the shell run nothing: the one that prepares /tests prints what a container
 * with PID 1's environment `start` (or a failing read of it, `start` undefined) would print, and one planted
 * reward file; the test run's command is kept.
 */
function preparedSandbox(start: { environ: string; cwd: string } | undefined) {
  const execArgv: string[] = [];
  let command = '';
  const sandbox = {
    async execArgv(argv: string[]) {
      const script = argv.join(' ');
      execArgv.push(script);
      const nonce = /(tbrl-start-[0-9a-f]+)/.exec(script)?.[1];
      const read = nonce ? (start ? `${start.environ}\0${start.cwd}\n\n${nonce} 0\n` : `cat: /proc/1/environ: Permission denied\n\n${nonce} 1\n`) : '';
      return { exitCode: 0, output: `${read}/logs/verifier/reward.txt\n`, droppedBytes: 0, timedOut: false, durationMs: 1 };
    },
    async putArchive() {},
    async exec(cmd: string) {
      command = cmd;
      return { exitCode: 0, output: '=== short test summary info ===\nPASSED tests/test_outputs.py::test_script_exists\n=== 1 passed in 0.1s ===\n', droppedBytes: 0, timedOut: false, durationMs: 1 };
    },
  };
  return { sandbox: sandbox as unknown as Sandbox, execArgv, command: () => command };
}

test("runTests reads PID 1's environment and WORKDIR in the exec that prepares /tests, once per sandbox; a failed read leaves the test run to read /proc/1 itself", async () => {
  const task = await loadTask(resolve(__dirname, '..', '..', 'examples', 'hello-world'));
  const known = preparedSandbox({ environ: "PATH=/usr/bin:/bin\0LANG=C.UTF-8\0BAD-NAME=x\0Q=it's", cwd: '/app' });
  const first = await runTests({ task, sandbox: known.sandbox });
  assert.deepEqual(first.discardedBeforeVerification, ['/logs/verifier/reward.txt']);
  assert.equal(known.execArgv.length, 1);
  assert.match(known.execArgv[0], /cat \/proc\/1\/environ/);
  // The command is quoted once more for `bash -c` ('\'' for each quote); PID 1's variables, then its cwd, in order.
  const q = (text: string) => text.replace(/'/g, "'\\''");
  const at = ["export PATH='/usr/bin:/bin'", "export LANG='C.UTF-8'", "export Q='it'\\''s'", "cd '/app' 2>/dev/null || cd /"].map((line) => known.command().indexOf(q(line)));
  assert.ok(at.every((x, i) => x > 0 && (i === 0 || x > at[i - 1])), `${at} in ${known.command()}`);
  assert.doesNotMatch(known.command(), /BAD-NAME|< \/proc\/1\/environ/);
  // The second run on the same sandbox prepares without reading PID 1 again, and starts from the same place.
  await runTests({ task, sandbox: known.sandbox });
  assert.equal(known.execArgv.length, 2);
  assert.doesNotMatch(known.execArgv[1], /proc\/1/);
  assert.ok(known.command().includes(q("cd '/app' 2>/dev/null")));

  const refused = preparedSandbox(undefined);
  const r = await runTests({ task, sandbox: refused.sandbox });
  assert.deepEqual(r.discardedBeforeVerification, ['/logs/verifier/reward.txt']);
  assert.match(refused.command(), /done < \/proc\/1\/environ/);
  assert.doesNotMatch(refused.command(), /Permission denied/);
  // Not known yet, so the next run tries the read again.
  await runTests({ task, sandbox: refused.sandbox });
  assert.match(refused.execArgv[1], /cat \/proc\/1\/environ/);
});
