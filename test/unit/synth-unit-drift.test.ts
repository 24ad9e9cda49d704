/**
 * The domains' own fault class (issue #20): unit drift. One shard reports the measure under another
 * key in another unit (CPU seconds for cpu_ms, hundredths of a unit, milliseconds for seconds).
 * The conversion is exact and reversible byte for byte in every shard format; a seed draws the same
 * shared faults as before the class existed; the reference solver converts on the host with python3
 * and the strict verifier passes it, while an honest pipeline that ignores the unit fails the
 * verifier and earns less Φ than the honest one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SYNTH_RECIPE_FILE, synthesize } from '../../src/core/synth/generate';
import { runGates } from '../../src/core/synth/gates';
import { applyFault, fromDriftedUnit, revertFault, toDriftedUnit } from '../../src/core/synth/faults';
import { DOMAINS } from '../../src/core/synth/domains';
import { drawWorld, type FaultSpec } from '../../src/core/synth/world';
import { renderWorld } from '../../src/core/synth/render';
import { DOMAIN_FAULT_CLASSES, FAULT_CLASSES } from '../../src/core/synth/types';

const unitDrift = (faults: FaultSpec[]) => faults.find((f): f is Extract<FaultSpec, { class: 'unit-drift' }> => f.class === 'unit-drift');

describe('unit drift', () => {
  it('converts exactly both ways at every scale', () => {
    assert.equal(toDriftedUnit(5, '1000'), '0.005');
    assert.equal(toDriftedUnit(1234, '1000'), '1.234');
    assert.equal(toDriftedUnit(70, '100'), '0.70');
    assert.equal(toDriftedUnit(42, '0.001'), '42000');
    for (const scale of ['1000', '100', '10', '0.1', '0.01', '0.001'] as const) {
      for (const n of [1, 7, 10, 99, 100, 1000, 4999, 123456]) assert.equal(fromDriftedUnit(toDriftedUnit(n, scale), scale), n, `${n} at ${scale}`);
    }
  });

  it('every domain declares one, with a key no shard already uses', () => {
    for (const spec of Object.values(DOMAINS)) {
      assert.ok(spec.unitDrift, spec.name);
      assert.ok(![spec.fact.id, spec.fact.a, spec.fact.b, spec.fact.amount, spec.fact.partition, spec.aliases.amount, spec.aliases.a].includes(spec.unitDrift.key), spec.name);
      assert.ok(spec.faultStory['unit-drift'], `${spec.name} tells what the drift means in its words`);
    }
  });

  it('rewrites one shard in each format and reverts it byte for byte', () => {
    const formats = new Set<string>();
    for (const spec of Object.values(DOMAINS)) {
      for (let seed = 1; seed <= 6; seed++) {
        const { world, faults } = drawWorld(spec, 'small', seed);
        const fault = unitDrift(faults);
        assert.ok(fault, `${spec.name} s${seed}: the small tier draws the domain's fault`);
        assert.notEqual(fault.partition, 0, 'partition 0 keeps canonical units (the verifier appends there)');
        const schema = faults.find((f) => f.class === 'schema-drift');
        if (schema && schema.class === 'schema-drift') assert.notEqual(fault.partition, schema.partition);
        const clean = renderWorld(spec, world);
        const p = world.partitions[fault.partition];
        const path = `${spec.shardDir}/${p.file}`;
        const drifted = applyFault(spec, world, fault, clean);
        formats.add(p.format);
        assert.notEqual(drifted[path], clean[path]);
        assert.ok(drifted[path].includes(spec.unitDrift!.key), `${spec.name} ${p.format}: the drifted key is in the shard`);
        assert.ok(!new RegExp(`(^|[",\\t ])${spec.fact.amount}(["=,\\t]|$)`, 'm').test(drifted[path]), `${spec.name} ${p.format}: the canonical key is gone from the drifted shard`);
        for (const other of Object.keys(clean)) if (other !== path) assert.equal(drifted[other], clean[other], 'only that shard changes');
        assert.deepEqual(revertFault(spec, world, fault, drifted), clean);
      }
    }
    assert.deepEqual([...formats].sort(), ['csv', 'jsonl', 'kv', 'tsv'], 'every shard format was drifted at least once');
  });

  it('leaves the shared draw of a seed as it was, and the unit tier without the new class', () => {
    for (const spec of Object.values(DOMAINS)) {
      const withOwn = drawWorld(spec, 'small', 9);
      const sharedOnly = drawWorld(spec, 'small', 9, 4);
      assert.deepEqual(withOwn.faults.filter((f) => !(DOMAIN_FAULT_CLASSES as readonly string[]).includes(f.class)), sharedOnly.faults);
      assert.equal(unitDrift(drawWorld(spec, 'unit', 9).faults), undefined);
      assert.ok(unitDrift(drawWorld(spec, 'unit', 9, FAULT_CLASSES.length + 1).faults), 'an explicit fault count past the shared classes adds it');
    }
  });

  it('the written recipe regenerates the same task', () => {
    const t = synthesize({ domain: 'infra-ops', tier: 'small', seed: 4 });
    const recipe = JSON.parse(t.taskFiles[SYNTH_RECIPE_FILE]);
    assert.equal(recipe.faultCount, undefined, 'no fault count unless one was asked for');
    assert.deepEqual(synthesize({ domain: recipe.domain, tier: recipe.tier, seed: recipe.seed }).taskFiles, t.taskFiles);
    assert.match(t.instruction, /Some shards report cpu_s instead of cpu_ms: CPU seconds/);
  });

  // One domain per scale direction: CPU seconds in kv/jsonl (infra-ops), hundredths in csv/kv
  // (math-or), milliseconds as integers in jsonl/csv (software-eng).
  for (const [domain, seed] of [['infra-ops', 3], ['math-or', 2], ['software-eng', 5]] as const) {
    it(`${domain}: the reference converts and passes; ignoring the unit fails and earns less Φ`, { timeout: 240_000 }, async () => {
      const t = synthesize({ domain, tier: 'unit', seed, faultCount: FAULT_CLASSES.length + 1 });
      assert.ok(unitDrift(t.draw.faults));
      const report = await runGates(t, { probes: (name) => name === 'ignored-unit-drift' });
      const failed = report.gates.filter((g) => !g.passed);
      assert.deepEqual(failed, [], JSON.stringify(failed));
      const probe = report.probes.find((p) => p.name === 'ignored-unit-drift');
      assert.ok(probe, 'the near miss of this fault class ran');
      assert.equal(probe.kind, 'near-miss');
      assert.equal(probe.verifierPassed, false);
      assert.ok(probe.phi < report.referencePhi[report.referencePhi.length - 1], `Φ ${probe.phi} below the honest state's`);
    });
  }
});
