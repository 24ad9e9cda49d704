import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import {
  checkSolutionLeaks,
  checkTestsInImage,
  checkTimeouts,
  checkWeights,
  scriptRunsTests,
  checkCompose,
  pytestFunctionNames,
  runStaticChecks,
  staticCheckTask,
  type StaticInput,
} from '../../src/core/tasks/static-checks';
import { loadTask } from '../../src/core/tasks/load';

const ROOT = resolve(__dirname, '../..');

const TESTS = `import pytest


def test_output_exists():
    pass


class TestGroup:
    def test_inner(self):
        pass


async def test_async_thing():
    pass


def helper_not_a_test():
    pass
`;

function input(overrides: Partial<StaticInput> = {}): StaticInput {
  return {
    agentTimeoutSec: 300,
    testTimeoutSec: 60,
    testWeights: { test_output_exists: 0.5, inner: 0.25, test_async_thing: 0.25 },
    testsKind: 'pytest-summary',
    dockerfile: { path: 'Dockerfile', content: 'FROM python:3.13-slim\nWORKDIR /app\nCOPY data/ /app/data/\n' },
    testFiles: [
      { path: 'tests/test_outputs.py', content: TESTS },
      { path: 'run-tests.sh', content: '#!/bin/bash\npython3 -m pytest -rA $TEST_DIR/test_outputs.py\n' },
    ],
    solutionNames: ['solution.sh'],
    ...overrides,
  };
}

test('pytestFunctionNames: functions, methods and async tests; helpers excluded', () => {
  assert.deepEqual(pytestFunctionNames(TESTS), ['test_output_exists', 'test_inner', 'test_async_thing']);
});

test('a clean task has no findings (weights keyed with and without test_)', () => {
  assert.deepEqual(runStaticChecks(input()), []);
});

test('weights naming a test that does not exist are an error that lists the real tests', () => {
  const findings = checkWeights(input({ testWeights: { test_output_exists: 0.5, test_missing: 0.5 } }));
  const errors = findings.filter((f) => f.severity === 'error');
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /'test_missing' names no test function/);
  assert.match(errors[0].message, /test_output_exists, test_inner, test_async_thing/);
  // Unweighted tests earn nothing: a warning each.
  assert.deepEqual(findings.filter((f) => f.severity === 'warning').map((f) => f.message.match(/'(\w+)'/)?.[1]), ['test_inner', 'test_async_thing']);
});

test('weights that do not sum to 1 are an error; float noise is not', () => {
  const off = checkWeights(input({ testWeights: { test_output_exists: 0.5, test_inner: 0.2, test_async_thing: 0.2 } }));
  assert.ok(off.some((f) => f.severity === 'error' && /sum to 0\.9, not 1/.test(f.message)));
  const noisy = checkWeights(input({ testWeights: { test_output_exists: 0.1 + 0.2, test_inner: 0.3, test_async_thing: 0.4 } }));
  assert.deepEqual(noisy, []);
});

test('no test functions at all is an error for pytest-scored tasks only', () => {
  const none = input({ testFiles: [{ path: 'tests/test_outputs.py', content: 'x = 1\n' }], testWeights: undefined });
  assert.ok(checkWeights(none).some((f) => f.check === 'tests' && f.severity === 'error'));
  assert.deepEqual(checkWeights({ ...none, testsKind: 'harbor-reward' }), []);
});

test('inline tests in run-tests.sh count as tests; a script that only sets up does not', () => {
  // SWE-bench style: the test patch is applied by the script, then pytest runs what it added.
  const swebench = `#!/bin/bash
set -euo pipefail
cd /testbed
# install the test runner
pip install -q pytest==8.3.2
git apply -v - <<'PATCH'
diff --git a/tests/test_sum.py b/tests/test_sum.py
PATCH
pytest -rA tests/test_sum.py
`;
  const inline = input({ testFiles: [{ path: 'run-tests.sh', content: swebench }], testWeights: undefined });
  assert.deepEqual(checkWeights(inline).filter((f) => f.check === 'tests'), []);
  assert.equal(scriptRunsTests('#!/bin/bash\nset -e\ncurl -LsSf https://astral.sh/uv/install.sh | sh\nsource $HOME/.local/bin/env\nuv venv .tbench-testing\nexport PATH=$PATH:/x\n'), false);
  const setupOnly = input({ testFiles: [{ path: 'run-tests.sh', content: '#!/bin/bash\nset -e\ncd /app\npip install pytest\n' }], testWeights: undefined });
  assert.ok(checkWeights(setupOnly).some((f) => f.check === 'tests' && f.severity === 'error'));
});

test('tests that reference the reference solution are flagged with file and line', () => {
  const leaky = `def test_matches_oracle():\n    expected = open("/solution/solve.sh").read()\n    assert expected\n`;
  const findings = checkSolutionLeaks(input({ testFiles: [{ path: 'tests/test_outputs.py', content: leaky }] }));
  assert.equal(findings.length, 1);
  assert.equal(findings[0].file, 'tests/test_outputs.py');
  assert.equal(findings[0].line, 2);
  const runner = checkSolutionLeaks(input({ testFiles: [{ path: 'run-tests.sh', content: '#!/bin/bash\nbash solution.sh\npytest -rA\n' }] }));
  assert.deepEqual(runner.map((f) => [f.file, f.line]), [['run-tests.sh', 2]]);
});

test('a Dockerfile that copies the solution or the tests in is flagged', () => {
  const docker = { path: 'Dockerfile', content: 'FROM python:3.13-slim\nCOPY solution.sh /app/\nCOPY tests/ /tests/\nRUN echo ok\n' };
  const leaks = checkSolutionLeaks(input({ dockerfile: docker }));
  assert.deepEqual(leaks.map((f) => f.line), [2]);
  const baked = checkTestsInImage(input({ dockerfile: docker }));
  assert.deepEqual(baked.map((f) => f.line), [3]);
});

test('the agent\'s own files named like a solution are not leaks', () => {
  const own = `def test_script():\n    assert open("/app/solution.sh").read().startswith("#!")\n    assert "/app/my_solution" != ""\n`;
  assert.deepEqual(checkSolutionLeaks(input({ testFiles: [{ path: 'tests/test_outputs.py', content: own }] })), []);
});

test('timeouts: non-positive and huge are errors, very short is a warning', () => {
  assert.deepEqual(checkTimeouts(input()), []);
  assert.equal(checkTimeouts(input({ agentTimeoutSec: 0 }))[0].severity, 'error');
  assert.equal(checkTimeouts(input({ testTimeoutSec: Number.NaN }))[0].severity, 'error');
  assert.equal(checkTimeouts(input({ agentTimeoutSec: 7 * 24 * 3600 }))[0].severity, 'error');
  assert.equal(checkTimeouts(input({ testTimeoutSec: 2 }))[0].severity, 'warning');
});

test('compose services besides client are a warning (tbrl runs one container)', () => {
  const compose = (content: string) => checkCompose(input({ compose: { path: 'docker-compose.yaml', content } }));
  assert.deepEqual(compose('services:\n  client:\n    build: .\n'), []);
  const multi = compose('services:\n  client:\n    build: .\n  db:\n    image: postgres\n');
  assert.equal(multi.length, 1);
  assert.equal(multi[0].severity, 'warning');
  assert.match(multi[0].message, /besides client \(db\)/);
  assert.equal(compose('services: [\n')[0].severity, 'warning');
});

test('the bundled example and the fixtures pass the static checks as loaded from disk', async () => {
  for (const dir of ['examples/hello-world', 'test/fixtures/tasks/tb-log-summary', 'test/fixtures/tasks/harbor-csv-stats']) {
    // The Harbor fixture carries a table of its own to prove round trips keep it; Harbor ignores such keys, and the checks say so.
    const expected = dir.endsWith('harbor-csv-stats') ? ["'custom_table' is not a Harbor 1.3 task.toml key; it is ignored."] : [];
    assert.deepEqual((await staticCheckTask(await loadTask(join(ROOT, dir)))).map((f) => f.message), expected, dir);
  }
});
