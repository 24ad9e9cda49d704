import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyOutcome, unreachableHost, verifierError } from '../../src/core/run/classify-outcome';
import { creditForGroup } from '../../src/core/depgpo/credit';
import { TbrlError } from '../../src/core/errors';
import type { RewardRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';

const weights = { tests: 1, judge: 0 };
const scored = (tests: number, failing: string[] = []): RewardRecord => ({
  tests, weights, total: tests,
  testOutcomes: [{ name: 'test_ok', status: 'passed', weight: 1 }, ...failing.map((name) => ({ name, status: 'failed' as const, weight: 1 }))],
});
const offline: RewardRecord = {
  weights, total: 0,
  testError: { kind: 'crash', message: 'the test runner exited with 6 before pytest printed a summary', logTail: 'downloading uv 0.7.13\ncurl: (6) Could not resolve host: astral.sh\n' },
};

test('the agent\'s outcomes: passed, failed with the failing tests named, and agent timeout', () => {
  assert.deepEqual(classifyOutcome({ endReason: 'finished', reward: scored(1) }), { class: 'passed' });
  const failed = classifyOutcome({ endReason: 'finished', reward: scored(0.5, ['test_sum', 'test_mode']) });
  assert.equal(failed.class, 'failed');
  assert.equal(failed.cause, 'failing: test_sum, test_mode');
  assert.equal(classifyOutcome({ endReason: 'max-time', endMessage: 'Reached the time limit (60 s).', reward: scored(0, ['test_sum']) }).class, 'agent_timeout');
  // A run that passed within its last step is passed even if the clock ran out.
  assert.equal(classifyOutcome({ endReason: 'max-time', reward: scored(1) }).class, 'passed');
});

test('a verifier that could not reach a host names the host and what the task needs', () => {
  const o = classifyOutcome({ endReason: 'finished', reward: offline });
  assert.equal(o.class, 'verifier_error');
  assert.equal(o.cause, 'the verifier could not reach astral.sh: the task needs network or pre-provisioned tools');
  assert.equal(unreachableHost("pip._vendor.urllib3.exceptions.NameResolutionError: <HTTPSConnection(host='pypi.org', port=443)>: Failed to resolve 'pypi.org'"), 'pypi.org');
  assert.equal(unreachableHost('ssh: Could not resolve hostname: Temporary failure in name resolution'), 'a network host');
  assert.equal(unreachableHost('E   AssertionError: 3 != 4'), undefined);
  const harness = verifierError({ kind: 'crash', message: 'the test runner exited with 127 before pytest printed a summary', logTail: '/tests/run-tests.sh: line 3: tests/setup-uv-pytest.sh: No such file or directory\nbash: tests/run-uv-pytest.sh: No such file or directory\n' });
  assert.equal(harness.cause, 'the verifier needs tests/setup-uv-pytest.sh (No such file or directory), which is not in the container: the task needs it pre-provisioned');
  assert.match(verifierError({ kind: 'crash', message: 'x', logTail: 'run-tests.sh: line 2: uv: command not found\n' }).cause ?? '', /^the verifier needs uv \(command not found\)/);
  // Without a network cause the kind and message are the cause, and a stand-in is named.
  const noSummary = verifierError({ kind: 'no-summary', message: 'the test output has no pytest short test summary', logTail: 'collected 0 items' }, 'python:3.13-slim');
  assert.equal(noSummary.cause, 'no-summary: the test output has no pytest short test summary (on a stand-in for python:3.13-slim)');
  const noPytest = verifierError({ kind: 'crash', message: 'x', logTail: 'bash: pytest: command not found' }, 'python:3.13-slim');
  assert.equal(noPytest.cause, 'the verifier needs pytest (command not found), which is not in the container: the task needs it pre-provisioned (on a stand-in for python:3.13-slim)');
});

test('errors thrown by the run: context overflow and model errors come from the model client, the rest is the environment', () => {
  const overflow = classifyOutcome({ endReason: 'error', failure: new TbrlError('context-overflow', 'The conversation needs about 9000 tokens…', 'Raise contextTokens') });
  assert.equal(overflow.class, 'context_overflow');
  const tooLong = classifyOutcome({ endReason: 'error', failure: new TbrlError('model-bad-request', "The model endpoint refused the request (HTTP 400): This model's maximum context length is 8192 tokens", 'x') });
  assert.equal(tooLong.class, 'context_overflow');
  assert.equal(classifyOutcome({ endReason: 'error', failure: new TbrlError('model-unreachable', 'Cannot reach the model endpoint http://127.0.0.1:9/v1', 'x') }).class, 'model_error');
  const build = classifyOutcome({ endReason: 'error', failure: new TbrlError('IMAGE_BUILD_FAILED', 'Image build failed at line 3: RUN pip install numpy\n--- last build output ---', 'fix'), substitutedFrom: 'python:3.13-slim' });
  assert.equal(build.class, 'environment_error');
  assert.equal(build.cause, '[IMAGE_BUILD_FAILED] Image build failed at line 3: RUN pip install numpy (the image python:3.13-slim was replaced by a stand-in)');
  assert.equal(classifyOutcome({ endReason: 'interrupted', failure: new TbrlError('CONTAINER_GONE', 'Container abc no longer exists', 'x') }).class, 'environment_error');
  assert.equal(classifyOutcome({ endReason: 'cancelled', endMessage: 'Stopped before step 2 ran.' }).class, 'environment_error');
});

test('tbrl credit leaves masked outcomes out of the group, with the cause', () => {
  const header = { type: 'header', runId: 'r', task: { id: 't' } } as unknown as TrajectoryHeader;
  const footer = (reward: RewardRecord, outcome?: TrajectoryFooter['outcome']): TrajectoryFooter => ({
    type: 'footer', endedAt: '2026-12-02T00:00:00Z', endReason: 'finished', steps: 0, reward,
    usage: { promptTokens: 0, completionTokens: 0, verifierCalls: 0, verifierOutputTokens: 0 }, ...(outcome ? { outcome } : {}),
  });
  const credit = creditForGroup([
    { path: 'a', header: { ...header, runId: 'a' }, steps: [], footer: footer(scored(1)) },
    { path: 'b', header: { ...header, runId: 'b' }, steps: [], footer: footer(scored(0, ['test_x'])) },
    // An old footer without an outcome: derived as the verifier's failure.
    { path: 'c', header: { ...header, runId: 'c' }, steps: [], footer: footer(offline) },
    { path: 'd', header: { ...header, runId: 'd' }, steps: [], footer: footer(scored(0), { class: 'environment_error', cause: 'container lost' }) },
  ]);
  assert.deepEqual(credit.trajectories.map((t) => t.runId), ['a', 'b']);
  assert.deepEqual(credit.groups[0].rewards, [1, 0]);
  assert.deepEqual(credit.skipped.map((s) => s.path), ['c', 'd']);
  assert.match(credit.skipped[0].reason, /^masked verifier_error/);
  assert.equal(credit.skipped[1].reason, 'masked environment_error: container lost');
});
