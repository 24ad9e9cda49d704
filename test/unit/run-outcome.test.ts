import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMasked, outcomeOf } from '../../src/core/run/outcome';
import type { TrajectoryFooter } from '../../src/core/trajectory/schema';

const base: TrajectoryFooter = {
  type: 'footer', endedAt: '2026-12-02T00:00:00Z', endReason: 'finished', steps: 2,
  usage: { promptTokens: 0, completionTokens: 0, verifierCalls: 0, verifierOutputTokens: 0 },
};

test('a recorded outcome wins over derivation', () => {
  const f = { ...base, outcome: { class: 'model_error' as const, cause: 'HTTP 500' }, reward: { tests: 1, weights: { tests: 1, judge: 0 }, total: 1 } };
  assert.deepEqual(outcomeOf(f), { class: 'model_error', cause: 'HTTP 500' });
});

test('old footers: all tests passing is passed, a crashed test run is the verifier\'s failure, not the agent\'s', () => {
  assert.equal(outcomeOf({ ...base, reward: { tests: 1, weights: { tests: 1, judge: 0 }, total: 1 } }).class, 'passed');
  assert.equal(outcomeOf({ ...base, reward: { tests: 0.5, weights: { tests: 1, judge: 0 }, total: 0.5 } }).class, 'failed');
  const crashed = outcomeOf({ ...base, reward: { testError: { kind: 'no-results', message: 'curl: Could not resolve host', logTail: '' }, weights: { tests: 1, judge: 0 }, total: 0 } });
  assert.equal(crashed.class, 'verifier_error');
  assert.match(crashed.cause ?? '', /Could not resolve host/);
  assert.equal(outcomeOf({ ...base, endReason: 'max-time', reward: { tests: 0, weights: { tests: 1, judge: 0 }, total: 0 } }).class, 'agent_timeout');
  assert.equal(outcomeOf({ ...base, endReason: 'error', endMessage: 'container lost\nstack' }).cause, 'container lost');
  assert.equal(outcomeOf(undefined).class, 'environment_error');
});

test('only passed, failed and agent timeout carry a reward', () => {
  assert.equal(isMasked('passed'), false);
  assert.equal(isMasked('failed'), false);
  assert.equal(isMasked({ class: 'agent_timeout' }), false);
  for (const c of ['context_overflow', 'model_error', 'verifier_error', 'environment_error'] as const) assert.equal(isMasked(c), true);
});
