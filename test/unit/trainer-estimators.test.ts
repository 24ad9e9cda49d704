import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { algorithmNames, algorithmsFile, defaultAlgorithm, estimatorFor, isAlgorithm, loadAlgorithms } from '../../src/core/trainer/estimators';
import type { AdvantageExport } from '../../src/core/depgpo/credit';
import { TbrlError } from '../../src/core/errors';

const ROOT = join(__dirname, '..', '..');

test('algorithms.json lists each estimator once, with a TypeScript and a Python half', () => {
  const specs = loadAlgorithms();
  assert.deepEqual(algorithmNames(), ['grpo', 'depgpo']);
  assert.equal(defaultAlgorithm(), 'grpo');
  for (const name of algorithmNames()) {
    assert.equal(estimatorFor(name).id, name);
    assert.equal(typeof specs[name].description, 'string');
    assert.equal(typeof specs[name].verlEstimator, 'string');
    assert.ok(existsSync(join(ROOT, 'trainer-bridge', 'tbrl_bridge', 'estimators', `${name}.py`)), `trainer-bridge/tbrl_bridge/estimators/${name}.py`);
  }
  assert.ok(isAlgorithm('depgpo'));
  assert.ok(!isAlgorithm('ppo'));
  assert.ok(!isAlgorithm('toString'), 'an Object.prototype key is no algorithm');
});

test('an algorithms.json entry without a TypeScript estimator is refused, naming it', () => {
  const bridge = mkdtempSync(join(tmpdir(), 'tbrl-alg-'));
  mkdirSync(join(bridge, 'tbrl_bridge'));
  const specs = JSON.parse(readFileSync(algorithmsFile(), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(bridge, 'tbrl_bridge', 'algorithms.json'), JSON.stringify({ ...specs, rloo: { description: 'x', stepFactors: false, verlEstimator: 'rloo' } }));
  assert.throws(() => loadAlgorithms(bridge), (e: TbrlError) => e.code === 'train-algorithms' && /no TypeScript estimator for rloo/.test(e.message));
});

test('GRPO gives every step its group advantage; DepGPO keeps the per-step credit', () => {
  const credit = {
    schema: 'tbrl.advantages/1',
    trajectories: [{ path: 'a', group: 'g', reward: 1, groupAdvantage: 0.5, z: 2, fallback: 'why', steps: [{ index: 0, score: 1, tokens: 3, factor: 1.5, advantage: 0.375 }, { index: 1, score: 0, tokens: 1, factor: 0.5, advantage: 0.125 }] }],
  } as unknown as AdvantageExport;
  const grpo = estimatorFor('grpo').advantages(credit);
  assert.deepEqual(grpo.trajectories[0].steps.map((s) => [s.factor, s.advantage]), [[1, 0.5], [1, 0.5]]);
  assert.equal(grpo.trajectories[0].z, 1);
  assert.ok(!('fallback' in grpo.trajectories[0]));
  assert.equal(estimatorFor('depgpo').advantages(credit), credit);
});
