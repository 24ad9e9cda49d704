import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choiceItems, decideRequest, decidedMessage, normalizeChoice } from '../../src/extension/debug/decisions';
import type { PendingTurnInfo } from '../../src/core/debug/turn';

// The decision logic both the Decide Turn quick pick and the step inspector's buttons go through.
const turn: PendingTurnInfo = {
  step: 4,
  text: '<bash>\ncmd: ls\n</bash>',
  candidates: [{ text: '<bash>\ncmd: ls\n</bash>', parses: true }, { text: '<bash>\ncmd: cat a\n\n</bash>', parses: true }, { text: 'not markup', parses: false }],
  chosen: 0,
  decision: { mode: 'pointwise', chosen: 0, scores: [0.9, 0.25, 0], calls: 3, outputTokens: 30, parallelOutputTokens: 10 },
};

test('the quick pick offers accept, every other candidate with its score, edit and stop', () => {
  const items = choiceItems(turn);
  assert.deepEqual(items.map((i) => i.choice), [{ action: 'accept' }, { action: 'pick', candidate: 1 }, { action: 'pick', candidate: 2 }, { action: 'edit' }, { action: 'stop' }]);
  assert.equal(items[0].label, '$(check) Accept the verifier\'s pick (candidate 0)');
  assert.equal(items[0].description, 'score 0.900');
  assert.equal(items[1].description, 'score 0.250');
  assert.equal(items[1].detail, '<bash> ⏎ cmd: cat a ⏎ </bash>', 'blank lines dropped, lines joined');
  assert.equal(items[2].description, 'score 0.000 · does not parse');
  const plain = choiceItems({ ...turn, decision: undefined, candidates: turn.candidates.slice(0, 1) });
  assert.deepEqual(plain.map((i) => i.label), ['$(check) Accept the proposed turn (candidate 0)', '$(edit) Edit the turn…', '$(debug-stop) Stop the run']);
});

test('tbrl/decide bodies: every choice but stop pauses before the next turn; picking the verifier\'s pick is accepting it', () => {
  assert.deepEqual(decideRequest({ action: 'accept' }), { action: 'accept', stopAfter: true });
  assert.deepEqual(decideRequest({ action: 'pick', candidate: 2 }), { action: 'pick', candidate: 2, stopAfter: true });
  assert.deepEqual(decideRequest({ action: 'edit' }, 'typed'), { action: 'edit', text: 'typed', stopAfter: true });
  assert.deepEqual(decideRequest({ action: 'edit', text: 'given' }), { action: 'edit', text: 'given', stopAfter: true });
  assert.deepEqual(decideRequest({ action: 'stop' }), { action: 'stop' });
  assert.deepEqual(normalizeChoice({ action: 'pick', candidate: 0 }, turn), { action: 'accept' });
  assert.deepEqual(normalizeChoice({ action: 'pick', candidate: 1 }, turn), { action: 'pick', candidate: 1 });
});

test('the message after a decision says what runs and how many labels were written', () => {
  assert.equal(decidedMessage(turn, { action: 'pick', candidate: 2 }, 2), 'Step 4: running candidate 2 instead of the verifier\'s pick 0; 2 preference labels written to labels.jsonl.');
  assert.equal(decidedMessage(turn, { action: 'accept' }, 1), 'Step 4: running candidate 0 (the verifier\'s pick); 1 preference label written to labels.jsonl.');
  assert.equal(decidedMessage(turn, { action: 'edit' }, undefined), 'Step 4: running the edited turn; labels were not written (see the Debug Console).');
  assert.equal(decidedMessage({ ...turn, decision: undefined }, { action: 'accept' }, 0), 'Step 4: running candidate 0; no preference label (no other candidate does something else).');
  assert.equal(decidedMessage(turn, { action: 'stop' }, 0), 'Step 4: stopping the run; nothing ran, no labels.');
});
