import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTrajectory } from '../../src/core/trajectory/replay';
import type { Trajectory } from '../../src/core/trajectory/reader';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';

function step(index: number, extra: Partial<StepRecord> = {}): StepRecord {
  return {
    type: 'step', index, startedAt: '2026-12-02T00:00:00Z', durationMs: 1000, candidates: [{ text: '<bash>\ncmd: ls\n</bash>', parses: true }],
    chosenText: '<bash>\ncmd: ls\n</bash>', actions: [], parseErrors: [], usage: { promptTokens: 0, completionTokens: 0 }, todos: [], scratchpad: [], ...extra,
  };
}

const header = {
  type: 'header', schema: 'tbrl.trajectory/1.0', runId: 'r1', startedAt: '2026-12-02T00:00:00Z',
  task: { id: 'tev-data-eng-small-s11', format: 'terminal-bench', instruction: 'Clean the data.' }, policy: { kind: 'model', model: 'm', n: 3 },
  verifier: { mode: 'pairwise', n: 3, model: 'm' },
} as unknown as TrajectoryHeader;

function trajectory(steps: StepRecord[], footer: Partial<TrajectoryFooter>): Trajectory {
  const f = { type: 'footer', endedAt: '2026-12-02T00:01:00Z', endReason: 'finished', steps: steps.length, usage: { promptTokens: 1, completionTokens: 2, verifierCalls: 3, verifierOutputTokens: 4 }, ...footer } as TrajectoryFooter;
  return { path: 't.jsonl', header, steps, footer: f, truncated: false, warnings: [] };
}

test('replay shows the Φ curve, the pairwise matrix of each pairwise step and the PPRS breakdown', () => {
  const matrix = [[0, 0.8, 1], [0.2, 0, 0.6], [0, 0.4, 0]];
  const steps = [
    step(0, { phi: 0.25, candidates: [0, 1, 2].map(() => ({ text: 'x', parses: true })), decision: { mode: 'pairwise', chosen: 0, scores: [1.8, 0.8, 0.4], matrix, calls: 3, outputTokens: 9, parallelOutputTokens: 3 } }),
    step(1, { phi: 0.5 }),
    step(2, { phi: 1 }),
  ];
  const text = formatTrajectory(trajectory(steps, { reward: { weights: { tests: 1, judge: 0 }, total: 1.25, tests: 1, pprs: { pass: true, phi: 1, lambda: 0.25 } } }));
  assert.match(text, /Φ curve \(progress potential after each step\):\n {2}step {3}0 {2}█{5}·{15} {2}0\.250\n {2}step {3}1 {2}█{10}·{10} {2}0\.500\n {2}step {3}2 {2}█{20} {2}1\.000/);
  assert.match(text, /pairwise wins \(row over column\):\n +c0 +c1 +c2\n +c0 +— +0\.80 +1\.00 +← chosen\n +c1 +0\.20 +— +0\.60\n +c2 +0\.00 +0\.40 +—/);
  assert.match(text, /PPRS: R = 1\[pass\] \+ λ·Φ\(s_T\) = 1 \+ 0\.25 × 1\.000 = 1\.250/);
});

test('replay breaks a tests + judge reward down, and says why a judge share is missing', () => {
  const scored = formatTrajectory(trajectory([step(0)], { reward: { weights: { tests: 0.65, judge: 0.35 }, total: 0.79, tests: 0.7, judge: { score: 0.957, components: {}, promptVersion: 'p', backend: 'b' } } }));
  assert.match(scored, /Breakdown: 0\.65 × tests 0\.700 \+ 0\.35 × judge 0\.957 = 0\.790/);
  assert.doesNotMatch(scored, /Φ curve|pairwise wins/, 'nothing to show without Φ or a pairwise step');
  const missing = formatTrajectory(trajectory([step(0)], { reward: { weights: { tests: 1, judge: 0 }, total: 0.7, tests: 0.7, judge: { missing: 'no usable judge answer after 2 attempt(s)' } } }));
  assert.match(missing, /Breakdown: 1 × tests 0\.700 = 0\.700\n {2}judge: no usable judge answer after 2 attempt\(s\)/);
});

test('replay of a run without a judge does not explain a judge', () => {
  const text = formatTrajectory(trajectory([step(0)], { reward: { weights: { tests: 1, judge: 0 }, total: 1, tests: 1, judge: { missing: 'no judge configured' } } }));
  assert.match(text, /Breakdown: 1 × tests 1\.000 = 1\.000\nOutcome: passed\nTokens/);
});

test('replay says under the command where its trace is incomplete (a tracer killed and restarted), and the DepGPO fallback', () => {
  const lost = 'tracer lost: strace was killed during traced command 2 (kill -9 $(pgrep -x ld.so)); restarted (1 of 3)';
  const actions = [
    { kind: 'bash', input: { cmd: 'kill -9 $(pgrep -x ld.so)' }, observation: '[note: the tracer was killed during this command]', ok: true, durationMs: 5, trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [], incomplete: lost } },
    { kind: 'bash', input: { cmd: 'ls' }, observation: 'a', ok: true, durationMs: 5, trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [] } },
  ] as unknown as StepRecord['actions'];
  const text = formatTrajectory(trajectory([step(0, { actions })], { depgpo: { factors: [1], fallback: lost } as unknown as TrajectoryFooter['depgpo'] }));
  assert.equal(text.split('⚠ trace incomplete').length, 2, 'said once, under the command that lost it');
  assert.match(text, /\[note: the tracer was killed during this command\]\n {2}⚠ trace incomplete: tracer lost: strace was killed during traced command 2/);
  assert.match(text, /DepGPO factors: 1\.00 \(fallback: tracer lost: strace was killed/);
});
