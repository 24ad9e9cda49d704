import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DecideGate } from '../../webview/step-inspector/decide-gate';

// The step inspector's one-decision-per-turn rule, in the orders the extension's messages can
// arrive in: a step notification already on its way when the user clicked, a refusal, a decision
// made from the quick pick, the run moving on or back.
const waiting = (step: number, runId = 'r1') => ({ runId, step, pending: { chosen: 0 } });
const ran = (step: number, runId = 'r1') => ({ runId, step });

test('a waiting turn is offered; a render of the same turn that arrives after the click is not', () => {
  const gate = new DecideGate();
  assert.equal(gate.rendered(waiting(0)), true);
  gate.sending(waiting(0));
  assert.equal(gate.rendered(waiting(0)), false, 'the stale notification must not offer the decided turn again');
  assert.equal(gate.rendered(waiting(0)), false, 'nor a second one');
  assert.equal(gate.rendered(waiting(1)), true, 'the next turn is open');
});

test('a refusal opens the turn again, on whichever render of it is shown, and only that turn', () => {
  const gate = new DecideGate();
  gate.sending(waiting(1));
  assert.equal(gate.rendered(waiting(1)), false);
  assert.equal(gate.refused(waiting(1), waiting(1)), true, 'a re-rendered copy of the same turn opens again');
  assert.equal(gate.rendered(waiting(1)), true, 'and later renders of it stay open');

  gate.sending(waiting(1));
  assert.equal(gate.refused(waiting(1), waiting(2)), false, 'the run moved on: the refusal does not open the turn shown now');
  assert.equal(gate.refused(waiting(1), ran(1)), false);
  assert.equal(gate.refused(waiting(1), undefined), false);
  assert.equal(gate.refused(waiting(1), waiting(1, 'r2')), false, 'another run at the same step is not this turn');
});

test('the run moving on, or back to the same step, clears the decision', () => {
  const gate = new DecideGate();
  gate.sending(waiting(2));
  assert.equal(gate.rendered(ran(2)), false, 'a recorded step has nothing to decide');
  assert.equal(gate.rendered(waiting(2)), true, 'stepped back and waiting before step 2 again: a new choice');

  gate.sending(waiting(3));
  assert.equal(gate.rendered(waiting(3, 'fork')), true, 'a forked run waiting at the same step is another turn');
  assert.equal(gate.rendered(waiting(3)), true);
});

test('a decision from the quick pick greys the turn shown and its late re-renders, but not another turn', () => {
  const gate = new DecideGate();
  assert.equal(gate.decidedElsewhere(1, waiting(1)), true);
  assert.equal(gate.rendered(waiting(1)), false);
  assert.equal(gate.rendered(waiting(2)), true);

  assert.equal(gate.decidedElsewhere(1, waiting(2)), false, 'the next stop is already shown: its buttons stay');
  assert.equal(gate.rendered(waiting(2)), true);
  assert.equal(gate.decidedElsewhere(1, ran(1)), false);
  assert.equal(gate.decidedElsewhere(1, undefined), false);
});
