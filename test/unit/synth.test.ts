/**
 * Tev synthesis, pure parts: PRNG, latent world invariants, workflow DAG, renderers and their
 * parsers, each fault class's apply/revert, the progress contract arithmetic (gating, Φ, PPRS),
 * the share-no-code check, and determinism per seed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../src/core/synth/prng';
import { DATA_ENGINEERING, LOG_FORENSICS, domainByName } from '../../src/core/synth/domains';
import { checkInvariants, drawWorld, type FaultSpec } from '../../src/core/synth/world';
import { compileWorkflow } from '../../src/core/synth/dag';
import { parseWorld, renderWorld } from '../../src/core/synth/render';
import { applyFault, applyFaults, revertFault, revertFaults } from '../../src/core/synth/faults';
import { checkContract, gatedCredit, potential, pprsReward, type ProgressContract } from '../../src/core/synth/contract';
import { applyPprs } from '../../src/core/synth/progress';
import { tableCredit } from '../../src/core/synth/ts-grader';
import { checkNoSharedCode } from '../../src/core/synth/noshare';
import { synthesize } from '../../src/core/synth/generate';
import { buildProbes, NEAR_MISS_PATCHES } from '../../src/core/synth/probes';
import { FAULT_CLASSES, type World } from '../../src/core/synth/types';
import { TbrlError } from '../../src/core/errors';

const SPECS = [DATA_ENGINEERING, LOG_FORENSICS];

describe('Prng', () => {
  it('is deterministic per seed, different across seeds, and stays in range', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    const c = new Prng(43);
    const xs = Array.from({ length: 50 }, () => a.next());
    assert.deepEqual(xs, Array.from({ length: 50 }, () => b.next()));
    assert.notDeepEqual(xs, Array.from({ length: 50 }, () => c.next()));
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    const r = new Prng(7);
    const ints = Array.from({ length: 2000 }, () => r.int(1, 6));
    assert.ok(ints.every((n) => Number.isInteger(n) && n >= 1 && n <= 6));
    for (let face = 1; face <= 6; face++) assert.ok(ints.filter((n) => n === face).length > 250, `face ${face} is drawn about 1/6 of the time`);
    assert.deepEqual(new Prng(9).shuffle([1, 2, 3, 4, 5]).sort(), [1, 2, 3, 4, 5]);
  });
});

describe('latent world', () => {
  it('satisfies its invariants for every domain, tier and a range of seeds', () => {
    for (const spec of SPECS) {
      for (const tier of ['unit', 'small', 'full'] as const) {
        for (let seed = 0; seed < 8; seed++) {
          const { world, faults, holdoutPartition } = drawWorld(spec, tier, seed);
          checkInvariants(world);
          assert.equal(new Set(faults.map((f) => f.class)).size, faults.length);
          const missing = faults.find((f) => f.class === 'missing-records');
          if (missing) for (const id of missing.factIds) assert.notEqual(world.facts.find((f) => f.id === id)!.partition, holdoutPartition);
        }
      }
    }
  });

  it('rejects a world with a broken join, a duplicate id or a non-finite measure', () => {
    const { world } = drawWorld(DATA_ENGINEERING, 'unit', 3);
    const broken = (mutate: (w: World) => void, pattern: RegExp) => {
      const w = structuredClone(world);
      mutate(w);
      assert.throws(() => checkInvariants(w), (e: unknown) => e instanceof TbrlError && pattern.test(e.message));
    };
    broken((w) => { w.facts[0].a = 'c99'; }, /joins to missing dimension A row c99/);
    broken((w) => { w.dimB[1].id = w.dimB[0].id; }, /dimension B id .* is not unique/);
    broken((w) => { w.facts[1].amount = Number.NaN; }, /non-finite/);
    broken((w) => { w.dimB[0].category = 'Books'; }, /non-canonical category/);
  });

  it('rejects bad seeds and unknown domains with a fix', () => {
    assert.throws(() => drawWorld(DATA_ENGINEERING, 'unit', -1), /seed must be an integer/);
    assert.throws(() => domainByName('weather'), (e: unknown) => e instanceof TbrlError && /data-eng/.test(e.fix ?? "") && /quantum/.test(e.fix ?? ""));
  });
});

describe('workflow DAG', () => {
  it('takes the critical path as horizon and grows with faults and tier', () => {
    const none = compileWorkflow('unit', []);
    assert.equal(none.horizon, 11);
    assert.deepEqual(none.criticalPath.slice(0, 3), ['locate-inputs', 'read-index', 'parse-shards']);
    assert.equal(none.criticalPath.at(-1), 'package-pipeline');
    const drift = compileWorkflow('unit', ['schema-drift']);
    assert.equal(drift.horizon, 12, 'a repair between parse and merge lengthens the chain');
    assert.ok(drift.criticalPath.includes('align-drifted-columns'));
    const cache = compileWorkflow('unit', ['stale-cache']);
    assert.equal(cache.horizon, 11, 'a repair off the critical path does not lengthen it');
    assert.equal(none.difficulty, 'easy');
    assert.equal(compileWorkflow('full', [...FAULT_CLASSES]).difficulty, 'hard');
    assert.ok(compileWorkflow('small', ['schema-drift', 'stale-cache']).difficultyScore > compileWorkflow('unit', ['schema-drift', 'stale-cache']).difficultyScore);
  });
});

describe('renderers', () => {
  it('round-trip every domain and tier back to W', () => {
    for (const spec of SPECS) {
      for (const tier of ['unit', 'small', 'full'] as const) {
        const { world } = drawWorld(spec, tier, 11);
        const files = renderWorld(spec, world);
        assert.deepEqual(parseWorld(spec, files, world), world);
      }
    }
  });

  it('render real formats: CSV/TSV shards, JSON records and SQL for data-eng; key=value/JSONL logs for log forensics', () => {
    const { world } = drawWorld(DATA_ENGINEERING, 'small', 2);
    const files = renderWorld(DATA_ENGINEERING, world);
    assert.ok(Object.keys(files).some((p) => p.endsWith('.csv') || p.endsWith('.tsv')));
    assert.match(files['data/products.sql'], /^CREATE TABLE products \(sku TEXT PRIMARY KEY/);
    assert.equal(JSON.parse(files['data/customers.json']).length, world.dimA.length);
    const logs = renderWorld(LOG_FORENSICS, drawWorld(LOG_FORENSICS, 'small', 2).world);
    const shard = Object.entries(logs).find(([p]) => p.endsWith('.log'));
    assert.ok(shard);
    assert.match(shard[1], /^req_id=r\d{4} host=h\d\d route=rt\d\d duration_ms=\d+$/m);
  });
});

describe('fault classes', () => {
  const cases: Array<{ spec: typeof DATA_ENGINEERING; seed: number }> = [{ spec: DATA_ENGINEERING, seed: 4 }, { spec: LOG_FORENSICS, seed: 5 }];
  for (const { spec, seed } of cases) {
    it(`${spec.name}: each class changes the files and reverts them exactly`, () => {
      const all = drawWorld(spec, 'full', seed, 6);
      assert.equal(all.faults.length, 6);
      const clean = renderWorld(spec, all.world);
      for (const fault of all.faults) {
        const changed = applyFault(spec, all.world, fault, clean);
        assert.notDeepEqual(changed, clean, `${fault.class} changes something`);
        assert.deepEqual(revertFault(spec, all.world, fault, changed), clean, `${fault.class} reverts exactly`);
      }
      const faulted = applyFaults(spec, all.world, all.faults, clean);
      assert.deepEqual(revertFaults(spec, all.world, all.faults, faulted), clean);
    });
  }

  it('do what they declare', () => {
    const { world, faults } = drawWorld(DATA_ENGINEERING, 'full', 4, 6);
    const clean = renderWorld(DATA_ENGINEERING, world);
    const get = <C extends FaultSpec['class']>(c: C) => faults.find((f) => f.class === c) as Extract<FaultSpec, { class: C }>;
    const missing = applyFault(DATA_ENGINEERING, world, get('missing-records'), clean);
    const late = missing['data/orders/late/late-arrivals.jsonl'].trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(late.map((r) => r.order_id), get('missing-records').factIds);
    assert.ok(late.every((r) => typeof r.day === 'string'));
    const dup = applyFault(DATA_ENGINEERING, world, get('duplicated-records'), clean);
    const countLines = (files: Record<string, string>) => Object.entries(files).filter(([p]) => p.startsWith('data/orders/part-')).reduce((n, [, t]) => n + t.trim().split('\n').length, 0);
    assert.equal(countLines(dup) - countLines(clean), get('duplicated-records').factIds.length);
    const drift = applyFault(DATA_ENGINEERING, world, get('schema-drift'), clean);
    const shard = `data/orders/${world.partitions[get('schema-drift').partition].file}`;
    assert.ok(drift[shard].includes(get('schema-drift').column === 'amount' ? 'quantity' : 'cust_id'));
    const cat = applyFault(DATA_ENGINEERING, world, get('category-drift'), clean);
    for (const v of get('category-drift').variants) assert.ok(cat['data/products.sql'].includes(`'${v.text}'`));
    const shuffled = applyFault(DATA_ENGINEERING, world, get('shuffled-shard-index'), clean);
    assert.deepEqual(shuffled['data/orders/_index.tsv'].split('\n').sort(), clean['data/orders/_index.tsv'].split('\n').sort());
    assert.notEqual(shuffled['data/orders/_index.tsv'], clean['data/orders/_index.tsv']);
    const stale = applyFault(DATA_ENGINEERING, world, get('stale-cache'), clean);
    assert.ok(stale['cache/revenue_by_region_category.csv']);
  });
});

describe('progress contract', () => {
  const contract: ProgressContract = {
    version: 1,
    lambda: 0.25,
    nodes: [
      { id: 'a', weight: 0.5, preconditions: [], artifact: 'x', description: '', stages: [], evidence: [] },
      { id: 'b', weight: 0.25, preconditions: ['a'], artifact: 'y', description: '', stages: [], evidence: [] },
      { id: 'c', weight: 0.25, preconditions: ['b'], artifact: 'z', description: '', stages: [], evidence: [] },
    ],
  };

  it('gates credit by the minimum over the node and all its ancestors', () => {
    assert.deepEqual(gatedCredit(contract, { a: 0.5, b: 1, c: 1 }), { a: 0.5, b: 0.5, c: 0.5 });
    assert.deepEqual(gatedCredit(contract, { a: 1, b: 0, c: 1 }), { a: 1, b: 0, c: 0 }, 'c is gated by its grandparent chain');
    assert.equal(potential(contract, { a: 1, b: 0.5, c: 1 }), 0.5 + 0.25 * 0.5 + 0.25 * 0.5);
    assert.equal(potential(contract, { a: 0, b: 1, c: 1 }), 0);
    assert.equal(potential(contract, { a: 1, b: 1, c: 1 }), 1);
  });

  it('computes PPRS exactly: R = 1[pass] + 0.25 Φ', () => {
    assert.deepEqual(pprsReward(true, 1), { pass: true, phi: 1, lambda: 0.25, total: 1.25 });
    assert.equal(pprsReward(false, 0.6).total, 0.15);
    assert.equal(pprsReward(true, 0.3).total, 1.075);
    assert.equal(pprsReward(false, 0).total, 0);
    assert.equal(pprsReward(false, 0.85, 0.5).total, 0.425);
    assert.throws(() => pprsReward(true, 1.5), /Φ must be in \[0, 1\]/);
  });

  it('turns a test reward into PPRS: pass only when every weighted test passed and the run had no test error', () => {
    const base = { weights: { tests: 1, judge: 0 }, total: 0 };
    assert.deepEqual(applyPprs({ ...base, tests: 1, total: 1 }, 0.85), { ...base, tests: 1, total: 1.2125, pprs: { pass: true, phi: 0.85, lambda: 0.25 } });
    assert.equal(applyPprs({ ...base, tests: 0.99 }, 0.85).total, 0.2125);
    assert.equal(applyPprs({ ...base, testError: { kind: 'timeout', message: 'x', logTail: '' } }, 0.3).total, 0.075);
  });

  it('grades a table by multiset overlap, halves a right-but-misordered one, and needs the exact header', () => {
    const want = { header: ['k', 'v'], rows: [['a', '1'], ['b', '2'], ['b', '2'], ['c', '3']] };
    assert.equal(tableCredit(['k,v', 'a,1', 'b,2', 'b,2', 'c,3'], want), 1);
    assert.equal(tableCredit(['k,v', 'c,3', 'b,2', 'b,2', 'a,1'], want), 0.5);
    assert.equal(tableCredit(['k,v', 'a,1', 'b,2'], want), 0.5);
    assert.equal(tableCredit(['k,v', 'a,1', 'b,2', 'b,2', 'c,3', 'x,9'], want), 0.8, 'junk rows dilute the credit');
    assert.equal(tableCredit(['K,V', 'a,1', 'b,2', 'b,2', 'c,3'], want), 0);
    assert.equal(tableCredit(undefined, want), 0);
  });

  it('rejects weights that do not sum to 1, forward preconditions and bad credits', () => {
    assert.throws(() => checkContract({ ...contract, nodes: contract.nodes.map((n) => ({ ...n, weight: 0.3 })) }), /weights sum to/);
    assert.throws(() => checkContract({ ...contract, nodes: [...contract.nodes].reverse() }), /not an earlier node/);
    assert.throws(() => gatedCredit(contract, { a: 1, b: 2, c: 0 }), /credit of node b/);
    checkContract(synthesize({ domain: 'data-eng', tier: 'unit', seed: 1 }).contract);
  });
});

describe('share-no-code check', () => {
  const grader = 'import json\n\ndef tally(rows):\n    seen = {}\n    for r in rows:\n        seen[r] = seen.get(r, 0) + 1\n    return seen\n';
  const verifier = 'import json\n\ndef check(rows, expected):\n    assert sorted(rows) == sorted(expected), "rows differ from the expected ones"\n    return True\n';
  it('passes independent programs and flags imports, copied lines and copied function bodies', () => {
    assert.deepEqual(checkNoSharedCode([{ name: 'grader', file: 'tests/progress.py', text: grader }, { name: 'verifier', file: 'tests/test_outputs.py', text: verifier }]), []);
    const importing = checkNoSharedCode([{ name: 'grader', file: 'tests/progress.py', text: grader + 'from test_outputs import check\n' }, { name: 'verifier', file: 'tests/test_outputs.py', text: verifier }]);
    assert.ok(importing.some((f) => f.kind === 'reference'));
    const copied = checkNoSharedCode([{ name: 'grader', file: 'tests/progress.py', text: grader + verifier.replace('def check(', 'def other_name(') }, { name: 'verifier', file: 'tests/test_outputs.py', text: verifier }]);
    assert.ok(copied.some((f) => f.kind === 'function'));
    assert.ok(copied.some((f) => f.kind === 'line' && f.detail.includes('assert sorted(rows)')));
    const helper = checkNoSharedCode([{ name: 'grader', file: 'tests/progress.py', text: 'from tbrl_common import tally\n' + grader }, { name: 'verifier', file: 'tests/test_outputs.py', text: 'import json, tbrl_common\n' + verifier }]);
    assert.deepEqual(helper.filter((f) => f.kind === 'import').map((f) => f.between[0]), ['grader', 'verifier'], 'a shared helper module is shared code');
  });

  it('holds for the rendered grader, verifier and solver of both domains', () => {
    for (const domain of ['data-eng', 'log-forensics']) {
      const t = synthesize({ domain, tier: 'small', seed: 3 });
      assert.deepEqual(checkNoSharedCode([
        { name: 'grader', file: 'tests/progress.py', text: t.taskFiles['tests/progress.py'] },
        { name: 'verifier', file: 'tests/test_outputs.py', text: t.taskFiles['tests/test_outputs.py'] },
        { name: 'solver', file: 'solution.sh', text: t.taskFiles['solution.sh'] },
      ]), []);
    }
  });
});

describe('synthesis', () => {
  it('is byte-identical for the same seed and differs across seeds and domains', () => {
    const a = synthesize({ domain: 'data-eng', tier: 'small', seed: 21 });
    const b = synthesize({ domain: 'data-eng', tier: 'small', seed: 21 });
    assert.deepEqual(a.taskFiles, b.taskFiles);
    assert.equal(JSON.stringify(a.labels), JSON.stringify(b.labels));
    const c = synthesize({ domain: 'data-eng', tier: 'small', seed: 22 });
    assert.notDeepEqual(a.taskFiles['tests/progress.json'], c.taskFiles['tests/progress.json']);
    const d = synthesize({ domain: 'log-forensics', tier: 'small', seed: 21 });
    assert.ok(Object.keys(d.taskFiles).some((p) => p.startsWith('app/data/logs/')));
  });

  it('labels coverage: domain, scale, horizon, stages, faults, artifact roles', () => {
    const t = synthesize({ domain: 'log-forensics', tier: 'full', seed: 8 });
    assert.equal(t.labels.domain, 'log-forensics');
    assert.equal(t.labels.scale, 'full');
    assert.equal(t.labels.horizon, t.workflow.criticalPath.length);
    assert.equal(t.labels.faultClasses.length, 8, 'six shared classes, the unit drift of the domain and its second own class');
    assert.ok(t.labels.faultClasses.includes('timezone-skew') && t.labels.workflowStages.includes('convert-labels-to-utc'));
    assert.ok(t.labels.faultClasses.includes('unit-drift') && t.labels.workflowStages.includes('convert-drifted-units'));
    assert.ok(t.labels.workflowStages.includes('normalise-categories'));
    assert.equal(t.labels.artifactRoles['data/logs/_index.tsv'], 'input:shard-index');
    assert.equal(t.labels.artifactRoles['tests/progress.py'], 'hidden:progress-grader');
    assert.deepEqual(JSON.parse(t.taskFiles['tests/coverage.json']), t.labels);
  });

  it('has at least 14 shortcut probes for every task, and a near miss per fault class present', () => {
    for (const faultCount of [0, 6]) {
      const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 2, faultCount });
      const probes = buildProbes({ spec: t.spec, world: t.draw.world, faults: t.draw.faults, inputs: t.inputs, cleanInputs: t.cleanInputs, expected: t.expected });
      assert.ok(probes.filter((p) => p.kind === 'shortcut').length >= 14, `${probes.length} probes with ${faultCount} faults`);
      assert.equal(probes.filter((p) => p.kind === 'near-miss').length, 3 + (faultCount === 6 ? 5 : 0));
      assert.equal(new Set(probes.map((p) => p.name)).size, probes.length);
      for (const name of ['hard-coded-outputs-no-pipeline', 'replay-pipeline', 'edited-inputs', 'stale-outputs-real-pipeline', 'partial-write-looks-complete', 'pipeline-ignores-output-dir', 'pipeline-ignores-input-dir']) {
        assert.equal(probes.find((p) => p.name === name)?.kind, 'shortcut', name);
      }
      // Every near miss patches the reference pipeline; a patch whose target line is gone would make it a no-op.
      const pipeline = t.steps[0].script;
      for (const p of probes.filter((x) => x.kind === 'near-miss')) {
        for (const patch of NEAR_MISS_PATCHES[p.name]) assert.ok(pipeline.includes(patch.find), `${p.name}: ${patch.find}`);
      }
    }
  });

  it('declares the evidence each contract node needs besides its artifact', () => {
    const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 2 });
    for (const n of t.contract.nodes) assert.ok(n.evidence.includes('inputs-intact'), n.id);
    for (const n of t.contract.nodes.filter((x) => x.id !== 'pipeline')) assert.deepEqual(n.evidence, ['inputs-intact', 'reproduced-by-entry', 'tracks-holdout']);
    const progress = JSON.parse(t.taskFiles['tests/progress.json']);
    assert.ok(Object.keys(progress.inputs.files).some((f: string) => f.startsWith('orders/')));
    assert.deepEqual(Object.keys(progress.inputs.tables), ['products.db']);
    assert.ok(progress.expected_holdout.clean.rows.length < progress.expected.clean.rows.length);
  });

  it('keeps expected answers out of the files the agent sees', () => {
    const t = synthesize({ domain: 'data-eng', tier: 'small', seed: 5, faultCount: 6 });
    const visible = Object.entries(t.taskFiles).filter(([p]) => p.startsWith('app/')).map(([, text]) => text).join('\n');
    const report = t.taskFiles['tests/progress.json'];
    const rows = (JSON.parse(report) as { expected: { report: { rows: string[][] } } }).expected.report.rows;
    assert.ok(!rows.every((r) => visible.includes(r.join(','))), 'the true report is not in the inputs (the stale cache differs)');
  });
});
