import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pairedBootstrap, passAtK } from '../../src/core/eval/stats';
import { Prng } from '../../src/core/synth/prng';

test('pass@k is the unbiased estimator 1 − C(n−c,k)/C(n,k)', () => {
  assert.ok(Math.abs(passAtK(5, 2, 1) - 0.4) < 1e-12);
  assert.ok(Math.abs(passAtK(5, 2, 2) - 0.7) < 1e-12); // 1 − C(3,2)/C(5,2) = 1 − 3/10
  assert.ok(Math.abs(passAtK(10, 3, 5) - (1 - 21 / 252)) < 1e-12); // C(7,5)=21, C(10,5)=252
  assert.equal(passAtK(4, 0, 2), 0);
  assert.equal(passAtK(4, 3, 2), 1); // fewer than k failures: some k-subset always passes
  assert.equal(passAtK(4, 4, 4), 1);
  assert.throws(() => passAtK(2, 1, 3), /at least 3 trials/);
  assert.throws(() => passAtK(2, 3, 1), RangeError);
});

test('pass@k agrees with brute force over every k-subset', () => {
  const outcomes = [1, 0, 0, 1, 0, 1, 0];
  const subsets = (n: number, k: number): number[][] => (k === 0 ? [[]] : n < k ? [] : [...subsets(n - 1, k - 1).map((s) => [...s, n - 1]), ...subsets(n - 1, k)]);
  for (let k = 1; k <= outcomes.length; k++) {
    const all = subsets(outcomes.length, k);
    const brute = all.filter((s) => s.some((i) => outcomes[i] === 1)).length / all.length;
    assert.ok(Math.abs(passAtK(outcomes.length, 3, k) - brute) < 1e-12, `k=${k}`);
  }
});

test('the bootstrap interval is seeded, brackets the mean and narrows with more tasks', () => {
  const a = [0, 0.5, 1, 0, 0.5, 1, 0, 0.25];
  const b = [1, 0.5, 1, 0.5, 1, 1, 0, 0.75];
  const one = pairedBootstrap(a, b, { seed: 7 });
  assert.deepEqual(pairedBootstrap(a, b, { seed: 7 }), one);
  assert.notDeepEqual(pairedBootstrap(a, b, { seed: 8 }), one);
  assert.ok(Math.abs(one.mean - 0.3125) < 1e-12);
  assert.ok(one.low <= one.mean && one.mean <= one.high && one.low > 0);
  const many = pairedBootstrap([...a, ...a, ...a, ...a], [...b, ...b, ...b, ...b], { seed: 7 });
  assert.ok(many.high - many.low < one.high - one.low);
  assert.throws(() => pairedBootstrap([1], [1, 2]), /same tasks/);
  const r = new Prng(1);
  const xs = Array.from({ length: 1000 }, () => r.next());
  assert.ok(xs.every((x) => x >= 0 && x < 1) && Math.abs(xs.reduce((s, x) => s + x, 0) / 1000 - 0.5) < 0.05);
});
