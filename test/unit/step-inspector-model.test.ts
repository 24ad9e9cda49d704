import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import { buildPendingStepView, buildStepView } from '../../webview/step-inspector/model';
import type { PendingTurnInfo } from '../../src/core/debug/turn';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';
import type { StepRecord, TrajectoryFooter } from '../../src/core/trajectory/schema';

const t = parseTrajectory(syntheticTrajectory(8), 'fixture.jsonl');

test('candidates carry verifier scores, rank and the chosen one', () => {
  const v = buildStepView(t.header.runId, t.steps, t.footer, 5);
  assert.equal(v.step, 5);
  assert.equal(v.steps, 8);
  assert.deepEqual(v.candidates.map((c) => [c.index, c.score, c.rank, c.chosen, c.executed]), [[0, 0.9, 1, true, true], [1, 0.85, 2, false, false]]);
  assert.equal(v.candidates[1].text, '<bash>\ncmd: ls\n</bash>');
  assert.equal(v.decision?.margin, 0.05);
  assert.equal(v.decision?.mode, 'listwise');
  assert.equal(v.matrix, undefined, 'listwise mode has no pairwise matrix');
});

test('a step out of range is clamped to the last step', () => {
  assert.equal(buildStepView('r', t.steps, t.footer, 99).step, 7);
});

test('pairwise mode: the matrix cells are the off-diagonal wins; a human pick is the executed candidate', () => {
  const s: StepRecord = { ...t.steps[2], candidates: [...t.steps[2].candidates, { text: 'third', parses: false }],
    decision: { mode: 'pairwise', chosen: 2, scores: [0.2, 0.1, 0.7], matrix: [[0, 0.3, -0.4], [-0.3, 0, -0.6], [0.4, 0.6, 0]], calls: 3, outputTokens: 30, parallelOutputTokens: 10 },
    human: { action: 'pick', chosen: 0 } };
  const v = buildStepView('r', [s], undefined, 0);
  assert.deepEqual(v.candidates.map((c) => [c.rank, c.chosen, c.executed, c.parses]), [[2, false, true, true], [3, false, false, true], [1, true, false, false]]);
  assert.equal(v.human, 'a human picked candidate 0');
  assert.equal(v.matrix?.size, 3);
  assert.equal(v.matrix?.cells.length, 6);
  assert.deepEqual(v.matrix?.cells.find((c) => c.row === 2 && c.col === 1), { row: 2, col: 1, value: 0.6 });
  assert.equal(v.matrix?.max, 0.6);
  assert.equal(v.reward.rows.length, 0);
  assert.match(v.reward.missing ?? '', /not finished/);
});

test('reward rows: weighted tests with their share, judge components, total', () => {
  const v = buildStepView('r', t.steps, t.footer, 0);
  assert.deepEqual(v.reward.rows.map((r) => [r.group, r.name, r.value, r.weight, r.share]), [
    ['tests', 'tests', 0.75, 1, undefined],
    ['tests', 'test_a', 1, 3, 0.75],
    ['tests', 'test_b', 0, 1, 0.25],
    ['total', 'total', 0.75, undefined, undefined],
  ]);
  assert.equal(v.reward.rows[0].detail, '1/2 passed, weighted');
  const footer: TrajectoryFooter = { ...(t.footer as TrajectoryFooter), reward: { tests: 1, testOutcomes: [], weights: { tests: 0.7, judge: 0.3 }, total: 0.85,
    judge: { score: 0.5, components: { correctness: 0.6, style: 0.4 }, promptVersion: 'j1', backend: 'local' }, pprs: { pass: true, phi: 0.8, lambda: 0.2 } } };
  const rows = buildStepView('r', t.steps, footer, 0).reward.rows;
  assert.deepEqual(rows.filter((r) => r.group === 'judge').map((r) => [r.name, r.value]), [['judge', 0.5], ['correctness', 0.6], ['style', 0.4]]);
  assert.deepEqual(rows.find((r) => r.group === 'pprs')?.value, 0.8);
  assert.equal(rows.at(-1)?.value, 0.85);
});

test('Φ points follow the steps (the fixture drops at step 6) and mark the current step', () => {
  const v = buildStepView('r', t.steps, t.footer, 3);
  assert.deepEqual(v.phi.points.map((p) => p.phi), [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.1, 0.7]);
  assert.equal(v.phi.current, 3);
  const noPhi = t.steps.map((s) => ({ ...s, phi: undefined }));
  assert.deepEqual(buildStepView('r', noPhi, t.footer, 3).phi.points, []);
});

test('a waiting turn: its candidates and verifier decision from the session, none executed, the recorded steps for Φ', () => {
  const waiting: PendingTurnInfo = {
    step: 3,
    text: '<bash>\ncmd: pytest\n</bash>',
    candidates: [{ text: '<bash>\ncmd: ls\n</bash>', parses: true }, { text: '<bash>\ncmd: pytest\n</bash>', parses: true, completionTokens: 7 }, { text: 'oops', parses: false }],
    chosen: 1,
    decision: { mode: 'pointwise', chosen: 1, scores: [0.5, 0.9, 0], margin: 0.4, calls: 2, outputTokens: 20, parallelOutputTokens: 10 },
  };
  // The file may already hold more steps than the session (a fork's copied steps); only the ones before the turn count.
  const v = buildPendingStepView(t.header.runId, t.steps, undefined, waiting);
  assert.equal(v.step, 3);
  assert.deepEqual(v.pending, { chosen: 1 });
  assert.deepEqual(v.candidates.map((c) => [c.index, c.score, c.rank, c.chosen, c.executed, c.parses]), [[0, 0.5, 2, false, false, true], [1, 0.9, 1, true, false, true], [2, 0, 3, false, false, false]]);
  assert.equal(v.decision?.mode, 'pointwise');
  assert.equal(v.human, undefined);
  assert.deepEqual(v.phi.points.map((p) => p.step), [0, 1, 2], 'Φ of the steps that ran, not of the waiting one');
  assert.equal(v.phi.current, 3);
  assert.match(v.reward.missing ?? '', /not finished/);
  assert.equal(buildStepView(t.header.runId, t.steps, t.footer, 3).pending, undefined, 'a recorded step is not waiting');

  const noVerifier = buildPendingStepView('r', [], undefined, { step: 0, text: 'x', candidates: [{ text: 'x', parses: true }], chosen: 0 });
  assert.deepEqual(noVerifier.candidates.map((c) => [c.chosen, c.score]), [[true, undefined]], 'without a verifier the proposed turn is still the one accepting runs');
  assert.deepEqual(noVerifier.pending, { chosen: 0 });
});

test('a human pick (recorded by the agent loop as an edit to a candidate\'s text) shows as a pick of that candidate', () => {
  const s: StepRecord = { ...t.steps[0], chosenText: t.steps[0].candidates[1].text, human: { action: 'edit', chosen: 0, editedFrom: t.steps[0].candidates[0].text } };
  const v = buildStepView('r', [s], undefined, 0);
  assert.equal(v.human, 'a human picked candidate 1');
  assert.deepEqual(v.candidates.map((c) => [c.chosen, c.executed]), [[true, false], [false, true]]);
  const edited = buildStepView('r', [{ ...s, chosenText: '<bash>\ncmd: echo mine\n</bash>' }], undefined, 0);
  assert.equal(edited.human, 'edited by a human (from candidate 0)');
  assert.deepEqual(edited.candidates.map((c) => c.executed), [false, false]);
});
