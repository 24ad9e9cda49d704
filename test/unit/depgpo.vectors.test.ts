import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeDepgpo } from '../../src/core/depgpo/compute';
import { groupAdvantages, stepAdvantages } from '../../src/core/depgpo/factors';
import type { DepgpoInput, ResourceSet } from '../../src/core/depgpo/types';

// The same files are checked by the trainer-side Python estimator: both sides must agree to 1e-12.
const dir = join(__dirname, '..', 'vectors', 'depgpo');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

interface Vector {
  name: string;
  input: DepgpoInput;
  group: { rewards: number[]; index: number; normalizeStd: boolean };
  expected: {
    edges: Array<[number, number, 'file' | 'stdout', string[]]>;
    resources: ResourceSet;
    commandScores: number[];
    stepScores: number[];
    factors: number[];
    z: number;
    fallback: boolean;
    groupAdvantages: number[];
    stepAdvantages: number[];
  };
}

const close = (what: string, actual: number[], expected: number[]) => {
  assert.equal(actual.length, expected.length, `${what}: length`);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) < 1e-12, `${what}[${i}]: ${a} != ${expected[i]}`));
};

test('there are shared vectors to check', () => assert.ok(files.length >= 3, `only ${files.length} vectors in ${dir}`));

for (const file of files) {
  test(`shared vector ${file}`, () => {
    const v = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Vector;
    const r = computeDepgpo(v.input);
    assert.deepEqual(r.edges.map((e) => [e.from, e.to, e.kind, e.labels]), v.expected.edges);
    assert.deepEqual(r.resources, v.expected.resources);
    close('commandScores', r.commandScores.map((c) => c.score), v.expected.commandScores);
    close('stepScores', r.stepScores, v.expected.stepScores);
    close('factors', r.factors, v.expected.factors);
    close('z', [r.z], [v.expected.z]);
    assert.equal(r.fallback !== undefined, v.expected.fallback, `fallback: ${r.fallback}`);
    const adv = groupAdvantages(v.group.rewards, { normalizeStd: v.group.normalizeStd });
    close('groupAdvantages', adv, v.expected.groupAdvantages);
    close('stepAdvantages', stepAdvantages(r.factors, r.z, adv[v.group.index]), v.expected.stepAdvantages);
  });
}
