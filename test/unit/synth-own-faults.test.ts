/**
 * The domains' second fault class of their own (issue #20), after unit drift: an index hour in a
 * collector's local offset (log-forensics), compact build dates (software-eng), a stale shard the
 * index does not list (ai-research), orders re-sent in a later day's shard (data-eng), a deprecated
 * manifest key (infra-ops), negated measures (math-or) and provider-qualified device ids (quantum).
 * Each is exact and reverts byte for byte; a seed draws the same shared faults and unit drift as
 * before; the reference solver handles each on the host with python3 and the strict verifier passes
 * it, while the honest pipeline that ignores the fault fails the verifier and earns less Φ.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { SYNTH_RECIPE_FILE, synthesize } from '../../src/core/synth/generate';
import { runGates } from '../../src/core/synth/gates';
import { applyFault, fromCompactDate, revertFault, revertFaults, toCompactDate, toLocalLabel, toUtcLabel } from '../../src/core/synth/faults';
import { DOMAINS } from '../../src/core/synth/domains';
import { drawWorld, type FaultSpec } from '../../src/core/synth/world';
import { indexPath, parseWorld, renderWorld } from '../../src/core/synth/render';
import { FAULT_CLASSES, OWN_FAULT_CLASSES, type DomainSpec } from '../../src/core/synth/types';
import { buildProbes } from '../../src/core/synth/probes';

const ALL = FAULT_CLASSES.length + 2;
const ownOf = (spec: DomainSpec, faults: FaultSpec[]) => faults.find((f) => f.class === spec.ownFault?.class);
const NEAR_MISS: Record<string, string> = { 'timezone-skew': 'ignored-utc-offset', 'compact-dates': 'raw-compact-dates', 'orphan-shard': 'globbed-shard-dir', 'replayed-records': 'kept-latest-delivery', 'deprecated-key': 'ignored-deprecated-key', 'negated-measure': 'signed-measures', 'qualified-ids': 'unstripped-qualified-ids' };

describe("the domains' second own fault class", () => {
  it('converts labels exactly both ways, across day boundaries', () => {
    assert.equal(toLocalLabel('2026-03-01T05', 2), '2026-03-01T07+02:00');
    assert.equal(toLocalLabel('2026-03-01T03', -5), '2026-02-28T22-05:00');
    assert.equal(toLocalLabel('2026-03-01T20', 9), '2026-03-02T05+09:00');
    assert.equal(toUtcLabel('2026-02-28T22-05:00'), '2026-03-01T03');
    assert.equal(toUtcLabel('2026-03-01T03'), '2026-03-01T03', 'a UTC label is left alone');
    for (let h = 0; h < 24; h++) for (const offset of [-8, -1, 1, 5, 9]) {
      const label = `2026-03-01T${String(h).padStart(2, '0')}`;
      assert.equal(toUtcLabel(toLocalLabel(label, offset)), label, `${label} at ${offset}`);
    }
    assert.equal(toCompactDate('2026-03-04'), '20260304');
    assert.equal(fromCompactDate('20260304'), '2026-03-04');
    assert.equal(fromCompactDate('2026-03-04'), '2026-03-04');
  });

  it('every domain declares one of its own, each domain a different one, with its story and rule', () => {
    const classes = Object.values(DOMAINS).map((spec) => spec.ownFault?.class);
    assert.deepEqual([...classes].sort(), [...OWN_FAULT_CLASSES].sort());
    for (const spec of Object.values(DOMAINS)) {
      assert.ok(spec.ownFault && spec.faultStory[spec.ownFault.class], `${spec.name} tells what the fault means in its words`);
      const t = synthesize({ domain: spec.name, tier: 'unit', seed: 1 });
      assert.ok(t.instruction.includes(spec.ownFault.rule), `${spec.name}: the instruction states the rule even when the fault is not drawn`);
      assert.ok(NEAR_MISS[spec.ownFault.class], spec.name);
    }
  });

  it('applies to the latent world and reverts byte for byte, alone and in the whole plan (every domain, every tier)', () => {
    for (const spec of Object.values(DOMAINS)) {
      for (const tier of ['unit', 'small', 'full'] as const) {
        for (let seed = 1; seed <= 5; seed++) {
          const { world, faults, holdoutPartition } = drawWorld(spec, tier, seed, tier === 'unit' ? ALL : undefined);
          const own = ownOf(spec, faults);
          assert.ok(own, `${spec.name} ${tier} s${seed}: drawn`);
          const clean = renderWorld(spec, world);
          const alone = applyFault(spec, world, own, clean);
          assert.notDeepEqual(alone, clean, `${spec.name}: the fault changes the inputs`);
          assert.deepEqual(revertFault(spec, world, own, alone), clean);
          const changed = Object.keys({ ...clean, ...alone }).filter((p) => clean[p] !== alone[p]);
          switch (own.class) {
            case 'timezone-skew':
              assert.deepEqual(changed, [indexPath(spec)]);
              assert.match(alone[indexPath(spec)], /\t\d{4}-\d{2}-\d{2}T\d{2}[+-]\d{2}:00\n/);
              break;
            case 'compact-dates':
              assert.deepEqual(changed, [indexPath(spec)]);
              assert.match(alone[indexPath(spec)], /\t\d{8}\n/);
              break;
            case 'orphan-shard':
              assert.equal(changed.length, 1);
              assert.ok(!clean[indexPath(spec)].includes(own.file), 'the stale shard is not in the index');
              break;
            case 'replayed-records':
              assert.ok(own.replays.length > 0);
              for (const r of own.replays) {
                const f = world.facts.find((x) => x.id === r.id)!;
                assert.ok(r.partition > f.partition, 'a replay lands in a later shard');
                assert.notEqual(f.partition, holdoutPartition, 'dropping the hold-out partition must not leave a replay behind');
              }
              break;
            case 'deprecated-key':
              assert.deepEqual(changed, [spec.dimA.file]);
              assert.equal(alone[spec.dimA.file].split(`    ${spec.ownFault!.key}: `).length - 1, own.ids.length);
              break;
            case 'negated-measure':
            case 'qualified-ids':
              assert.notEqual(own.partition, 0, 'partition 0 stays canonical (the verifier appends there)');
              assert.deepEqual(changed, [`${spec.shardDir}/${world.partitions[own.partition].file}`]);
              break;
          }
          assert.deepEqual(parseWorld(spec, clean, world), world, 'the clean render parses back to W');
          const t = synthesize({ domain: spec.name, tier, seed, faultCount: tier === 'unit' ? ALL : undefined });
          assert.deepEqual(revertFaults(spec, world, t.draw.faults, t.inputs), t.cleanInputs, `${spec.name} ${tier} s${seed}: the whole plan reverts`);
          assert.ok(t.labels.faultClasses.includes(own.class));
          assert.ok(t.workflow.stages.some((s) => s.fault === own.class), 'its repair stage is in the workflow');
          assert.ok(buildProbes({ spec, world, faults: t.draw.faults, inputs: t.inputs, cleanInputs: t.cleanInputs, expected: t.expected }).some((p) => p.name === NEAR_MISS[own.class] && p.kind === 'near-miss'));
        }
      }
    }
  });

  it('leaves the shared faults and unit drift of a seed as they were, and the unit tier without the class', () => {
    for (const spec of Object.values(DOMAINS)) {
      for (const seed of [2, 9, 31]) {
        const own = spec.ownFault!.class;
        const shared = (faults: FaultSpec[]) => faults.filter((f) => (FAULT_CLASSES as readonly string[]).includes(f.class));
        assert.deepEqual(shared(drawWorld(spec, 'small', seed).faults), drawWorld(spec, 'small', seed, 4).faults);
        assert.deepEqual(drawWorld(spec, 'full', seed).faults.filter((f) => f.class !== own), drawWorld(spec, 'full', seed, FAULT_CLASSES.length + 1).faults);
        assert.equal(ownOf(spec, drawWorld(spec, 'unit', seed).faults), undefined);
        assert.equal(ownOf(spec, drawWorld(spec, 'unit', seed, FAULT_CLASSES.length + 1).faults), undefined, 'a count of 7 adds unit drift only');
        assert.ok(ownOf(spec, drawWorld(spec, 'unit', seed, ALL).faults), 'a count of 8 adds it');
      }
    }
    // Every draw but the new class, as the generator made it (digest taken
    // on main at 89c699f, before the class existed): 7 domains × 3 tiers × 15 seeds × 4 fault counts.
    const draws: unknown[] = [];
    for (const spec of Object.values(DOMAINS)) for (const tier of ['unit', 'small', 'full'] as const) for (let seed = 0; seed < 15; seed++) for (const count of [undefined, 2, 6, 7]) {
      const d = drawWorld(spec, tier, seed, count);
      draws.push([spec.name, tier, seed, count, d.holdoutPartition, d.faults.filter((f) => !(OWN_FAULT_CLASSES as readonly string[]).includes(f.class))]);
    }
    assert.equal(createHash('sha256').update(JSON.stringify(draws)).digest('hex'), '8269d54ff24633268cd8342bf67b400459ac3d88f9ee4476c28fb22293970aa6');
  });

  it('the written recipe regenerates the same task', () => {
    const t = synthesize({ domain: 'log-forensics', tier: 'small', seed: 4 });
    assert.ok(ownOf(t.spec, t.draw.faults));
    const recipe = JSON.parse(t.taskFiles[SYNTH_RECIPE_FILE]);
    assert.deepEqual(synthesize({ domain: recipe.domain, tier: recipe.tier, seed: recipe.seed }).taskFiles, t.taskFiles);
    assert.ok(t.labels.workflowStages.includes('convert-labels-to-utc'));
    assert.ok(t.labels.relationTypes.includes('index-label->UTC (offset)'));
  });

  // Three mechanisms on the host: an index label (log-forensics), an unlisted file (ai-research), a
  // rewritten dimension (infra-ops). bench/synth.bench.ts runs the gates on every domain.
  for (const [domain, seed] of [['log-forensics', 3], ['ai-research', 2], ['infra-ops', 5]] as const) {
    it(`${domain}: the reference handles it and passes; ignoring it fails and earns less Φ`, { timeout: 240_000 }, async () => {
      const t = synthesize({ domain, tier: 'unit', seed, faultCount: ALL });
      const own = ownOf(t.spec, t.draw.faults)!;
      const name = NEAR_MISS[own.class];
      const report = await runGates(t, { probes: (n) => n === name });
      const failed = report.gates.filter((g) => !g.passed);
      assert.deepEqual(failed, [], JSON.stringify(failed));
      const probe = report.probes.find((p) => p.name === name);
      assert.ok(probe, 'the near miss of this fault class ran');
      assert.equal(probe.kind, 'near-miss');
      assert.equal(probe.verifierPassed, false);
      assert.ok(probe.phi < report.referencePhi[report.referencePhi.length - 1], `Φ ${probe.phi} below the honest state's`);
    });
  }
});
