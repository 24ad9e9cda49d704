// The gate that keeps the N candidates of one `tbrl serve` request in step, so that node-llama-cpp
// decodes all of them in one batch per token (src/core/serve/engine.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockstepGate } from '../../src/core/serve/engine';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

test('no candidate goes on until every active candidate has its token', async () => {
  const gate = new LockstepGate();
  for (let i = 0; i < 3; i++) gate.join();
  const released: number[] = [];
  const a = gate.arrive().then(() => released.push(0));
  const b = gate.arrive().then(() => released.push(1));
  await tick();
  assert.equal(released.length, 0, 'two of three arrived: both still wait');
  const c = gate.arrive().then(() => released.push(2));
  await Promise.all([a, b, c]);
  assert.deepEqual(released.sort(), [0, 1, 2]);
  // The next step starts from zero arrivals.
  const again = gate.arrive();
  let done = false;
  void again.then(() => { done = true; });
  await tick();
  assert.equal(done, false, 'a new step waits for the others again');
});

test('a finished candidate leaves, and the ones waiting for it go on', async () => {
  const gate = new LockstepGate();
  gate.join();
  gate.join();
  let released = false;
  const waiting = gate.arrive().then(() => { released = true; });
  await tick();
  assert.equal(released, false);
  gate.leave(); // the other candidate hit a stop sequence
  await waiting;
  assert.equal(released, true);
  // Alone, a candidate never waits.
  await gate.arrive();
});

test('disabled (the benchmark baseline), arrive never waits', async () => {
  const gate = new LockstepGate(false);
  gate.join();
  gate.join();
  await gate.arrive();
});
