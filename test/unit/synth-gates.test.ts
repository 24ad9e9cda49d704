/**
 * Tev generation gates on the host (python3 + pytest, no Docker): a real task passes every gate
 * through `tbrl synth`; deliberately broken generators are rejected — a grader that imports or
 * copies the verifier, a reference whose Φ falls, a verifier weak enough for a probe to pass, and
 * expected answers leaked into the agent's workspace. Written tasks are byte-identical per seed.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { synthesize, type SynthesizedTask } from '../../src/core/synth/generate';
import { runGates, type GateReport } from '../../src/core/synth/gates';
import { writeSynthesizedTask } from '../../src/core/synth/write';
import { synthCommand } from '../../src/cli/commands/synth';
import { synthesizeBatch } from '../../src/core/synth/batch';
import { existsSync } from 'node:fs';
import { UsageError } from '../../src/cli/command';
import { loadTask } from '../../src/core/tasks/load';
import { staticCheckTask } from '../../src/core/tasks/static-checks';
import { validateTask } from '../../src/core/tasks/validate';
import { applyPprs } from '../../src/core/synth/progress';
import { DOMAINS } from '../../src/core/synth/domains';
import { referencePipelineOf, SOLVER_PRELUDE } from '../../src/core/synth/solver-program';
import { execFileSync } from 'node:child_process';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-synth-unit-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const gate = (r: GateReport, name: string) => r.gates.find((g) => g.name === name);

function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(dir, p)] = readFileSync(p, 'latin1') + `|mode=${(statSync(p).mode & 0o777).toString(8)}`;
    }
  };
  walk(dir);
  return out;
}

function broken(mutate: (t: SynthesizedTask) => void): SynthesizedTask {
  const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 4 });
  mutate(t);
  return t;
}

describe('tbrl synth with host gates', () => {
  it('writes a task that passes every gate, with its contract and report', async () => {
    const out = join(scratch, 'cli');
    const lines: string[] = [];
    const log = console.log;
    console.log = (...a: unknown[]) => lines.push(a.join(' '));
    let code: number;
    try {
      code = await synthCommand.run({ positionals: [out], values: { domain: 'data-eng', tier: 'unit', seed: '9', count: '1', format: 'tb' } });
    } finally {
      console.log = log;
    }
    assert.equal(code, 0, lines.join('\n'));
    const report = JSON.parse(readFileSync(join(out, 'synth-report.json'), 'utf8'));
    const [entry] = report.tasks;
    assert.equal(entry.passed, true);
    for (const name of ['round-trip', 'faults-reversible', 'share-no-code', 'no-leak', 'phi-monotone', 'phi-partial-inside', 'reference-phi-1', 'reference-passes', 'gaming-probes']) {
      assert.equal(entry.gates.find((g: { name: string }) => g.name === name)?.passed, true, name);
    }
    assert.deepEqual(entry.referencePhi, [0, 0.3, 0.55, 0.75, 1]);
    const shortcuts = entry.probes.filter((p: { kind: string }) => p.kind === 'shortcut');
    assert.ok(shortcuts.length >= 14);
    for (const p of entry.probes) assert.equal(p.verifierPassed, false, p.name);
    for (const p of shortcuts) assert.equal(p.phi, 0, `shortcut ${p.name}: Φ=${p.phi}`);
    const nearMisses = entry.probes.filter((p: { kind: string }) => p.kind === 'near-miss');
    for (const p of nearMisses) assert.ok(p.phi < 1, `near miss ${p.name}: Φ=${p.phi}`);
    assert.ok(nearMisses.some((p: { phi: number }) => p.phi > 0), 'near misses of an honest pipeline earn partial progress: Φ is not all-or-nothing');
    const gates = JSON.parse(readFileSync(join(out, 'tev-data-eng-unit-s9', 'tests', 'gates.json'), 'utf8'));
    assert.deepEqual(gates.probes.map((p: { name: string; kind: string }) => p.kind), entry.probes.map((p: { kind: string }) => p.kind), 'gates.json labels each probe with its kind');
    const task = await loadTask(join(out, 'tev-data-eng-unit-s9'));
    assert.equal(task.format, 'terminal-bench');
    assert.deepEqual(task.testWeights, { test_outputs_exact: 0, test_entry_point_exists: 0, test_inputs_untouched: 0, test_metamorphic_renamed_shards: 0, test_counterfactual_extra_record: 0, test_strict_verdict: 1 });
    assert.ok(readFileSync(join(task.tests.dir, 'progress.json'), 'utf8').includes('"lambda": 0.25'));
    assert.ok(task.tags.includes('tev'));
  });

  it('rejects bad arguments with a usage error', async () => {
    await assert.rejects(synthCommand.run({ positionals: [join(scratch, 'x')], values: { domain: 'weather', tier: 'unit', seed: '1', count: '1', format: 'tb' } }), (e: unknown) => e instanceof UsageError && /data-eng/.test((e as Error).message));
    await assert.rejects(synthCommand.run({ positionals: [join(scratch, 'x')], values: { domain: 'data-eng', tier: 'huge', seed: '1', count: '1', format: 'tb' } }), /--tier must be one of unit, small, full/);
    await assert.rejects(synthCommand.run({ positionals: [join(scratch, 'x')], values: { domain: 'data-eng', tier: 'unit', seed: '-3', count: '1', format: 'tb' } }), /--seed must be an integer/);
  });

  it('passes the reference gates on the log-forensics domain with every fault class', async () => {
    const t = synthesize({ domain: 'log-forensics', tier: 'small', seed: 12, faultCount: 6 });
    const r = await runGates(t, { probes: (name) => ['kept-duplicates', 'ignored-late-arrivals', 'raw-categories', 'index-line-order', 'dropped-drifted-shard', 'replay-pipeline'].includes(name) });
    assert.equal(r.passed, true, JSON.stringify(r.gates.filter((g) => !g.passed)));
    assert.equal(r.probes.length, 6);
  });

  it('writes byte-identical tasks for the same seed in both formats', async () => {
    for (const format of ['terminal-bench', 'harbor'] as const) {
      const a = join(scratch, `det-${format}-a`);
      const b = join(scratch, `det-${format}-b`);
      const c = join(scratch, `det-${format}-c`);
      await writeSynthesizedTask(synthesize({ domain: 'log-forensics', tier: 'unit', seed: 31 }), a, format);
      await writeSynthesizedTask(synthesize({ domain: 'log-forensics', tier: 'unit', seed: 31 }), b, format);
      await writeSynthesizedTask(synthesize({ domain: 'log-forensics', tier: 'unit', seed: 32 }), c, format);
      assert.deepEqual(treeOf(a), treeOf(b));
      assert.notDeepEqual(treeOf(a), treeOf(c));
      const task = await loadTask(a);
      assert.equal(task.format, format);
      assert.ok(readFileSync(join(task.tests.dir, 'progress.py'), 'utf8').includes('def follows_holdout'));
      assert.deepEqual(await staticCheckTask(task), [], 'the task passes tbrl validate\'s static checks');
    }
  });
});

describe('the reference pipeline the gates declare to the gate server', () => {
  it('is byte for byte the ref_pipeline.py the solution writes, in every domain', () => {
    for (const domain of Object.keys(DOMAINS)) {
      const t = synthesize({ domain, tier: 'unit', seed: 4 });
      const declared = referencePipelineOf(t.steps);
      assert.ok(declared, domain);
      // The first step, up to the end of its here-document (the rest runs the pipeline on data).
      const step = t.steps[0].script;
      const app = join(scratch, `declared-${domain}`);
      execFileSync('bash', ['-c', `${SOLVER_PRELUDE}\n${step.slice(0, step.indexOf('\nTBRL_PIPELINE\n') + '\nTBRL_PIPELINE\n'.length)}`], { env: { ...process.env, TBRL_APP: app } });
      assert.equal(declared, readFileSync(join(app, 'ref_pipeline.py'), 'utf8'), domain);
    }
  });
});

describe('PPRS cannot be gamed (issue #20)', () => {
  it('the four correct outputs written by hand earn reward 0; an honest partial run earns λΦ > 0', async () => {
    const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 4 });
    const r = await runGates(t, { probes: (name) => name === 'hard-coded-outputs-no-pipeline' || name === 'edited-inputs' });
    assert.equal(r.passed, true, JSON.stringify(r.gates.filter((g) => !g.passed)));
    const gamed = r.probes.find((p) => p.name === 'hard-coded-outputs-no-pipeline')!;
    assert.equal(gamed.phi, 0, 'no Φ for outputs the asked pipeline did not produce');
    assert.equal(applyPprs({ tests: 0, weights: { tests: 1, judge: 0 }, total: 0 }, gamed.phi).total, 0);
    assert.equal(r.probes.find((p) => p.name === 'edited-inputs')!.phi, 0, 'editing /app/data voids all credit');
    // After the first reference step only the clean file exists, written by a pipeline.sh that does only that.
    const partial = r.referencePhi[1];
    assert.equal(partial, 0.3);
    assert.equal(applyPprs({ tests: 0, weights: { tests: 1, judge: 0 }, total: 0 }, partial).total, 0.075);
  });

  it('a grader that pays for artifacts without evidence is rejected by the probe gate', async () => {
    const t = broken((x) => { x.taskFiles['tests/progress.py'] = x.taskFiles['tests/progress.py'].replace('raw[ident] = artifact[ident] if proof else 0.0', 'raw[ident] = artifact[ident]'); });
    const r = await runGates(t, { probes: (name) => name === 'hard-coded-outputs-no-pipeline' });
    assert.equal(gate(r, 'gaming-probes')!.passed, false);
    assert.match(gate(r, 'gaming-probes')!.detail, /hard-coded-outputs-no-pipeline: graders disagree on node clean/);
  });
});

describe('gates reject a broken generator', () => {
  it('a grader that imports the verifier, or copies one of its functions', async () => {
    const importing = broken((t) => { t.taskFiles['tests/progress.py'] = t.taskFiles['tests/progress.py'].replace('import tempfile', 'import tempfile\nfrom test_outputs import check_outputs'); });
    const r1 = await runGates(importing, { probes: false });
    assert.equal(r1.passed, false);
    assert.match(gate(r1, 'share-no-code')!.detail, /grader\/verifier share reference/);
    const verifier = importing.taskFiles['tests/test_outputs.py'];
    const fn = verifier.slice(verifier.indexOf('def _launch('), verifier.indexOf('def _private_copy('));
    const copying = broken((t) => { t.taskFiles['tests/progress.py'] = t.taskFiles['tests/progress.py'].replace('def main(argv):', `${fn.replace('_launch', 'start_pipeline')}\ndef main(argv):`); });
    const r2 = await runGates(copying, { probes: false });
    assert.equal(gate(r2, 'share-no-code')!.passed, false);
    assert.match(gate(r2, 'share-no-code')!.detail, /share function: grader:start_pipeline = verifier:_launch/);
  });

  it('a reference solution along which Φ falls', async () => {
    const t = broken((x) => { x.steps.splice(2, 0, { name: 'clobber', script: `rm -f "$APP/${x.spec.out.clean}"` }); });
    const r = await runGates(t, { probes: false });
    assert.equal(r.passed, false);
    assert.equal(gate(r, 'phi-monotone')!.passed, false);
    assert.equal(gate(r, 'phi-partial-inside')!.passed, false);
    assert.deepEqual(r.referencePhi.slice(0, 4), [0, 0.3, 0.55, 0]);
  });

  it('a verifier weak enough for a gaming probe to pass', async () => {
    const t = broken((x) => {
      x.taskFiles['tests/test_outputs.py'] = 'import os\n\n\ndef test_strict_verdict():\n    assert os.path.exists(os.path.join(os.environ.get("TBRL_APP", "/app"), "out/summary.json"))\n';
    });
    const r = await runGates(t, { probes: (name) => name === 'summary-only' || name === 'empty-output' });
    assert.equal(r.passed, false);
    assert.match(gate(r, 'gaming-probes')!.detail, /summary-only passes the strict verifier/);
    assert.doesNotMatch(gate(r, 'gaming-probes')!.detail, /empty-output/);
  });

  it('and the batch writer leaves a rejected task out while writing the others', async () => {
    const out = join(scratch, 'batch');
    const events: string[] = [];
    const { entries, reportPath } = await synthesizeBatch(out, {
      domain: 'log-forensics', tier: 'unit', seed: 40, count: 2, format: 'harbor', gates: { probes: false },
      mutate: (t) => { if (t.id.endsWith('-s40')) t.steps.splice(1, 0, { name: 'clobber', script: `rm -rf "$APP/out"` }); },
      onStart: (t, k) => events.push(`start ${k} ${t.id}`),
      onTask: (t, report) => events.push(`${report.passed ? 'passed' : 'rejected'} ${t.id}`),
    });
    assert.deepEqual(entries.map((e) => [e.task, e.passed]), [['tev-log-forensics-unit-s40', false], ['tev-log-forensics-unit-s41', true]]);
    // The editor's progress names each task before its gates run, not only once they are done.
    assert.deepEqual(events, ['start 0 tev-log-forensics-unit-s40', 'rejected tev-log-forensics-unit-s40', 'start 1 tev-log-forensics-unit-s41', 'passed tev-log-forensics-unit-s41']);
    assert.equal(existsSync(join(out, 'tev-log-forensics-unit-s40')), false);
    assert.equal(existsSync(join(out, 'tev-log-forensics-unit-s41', 'task.toml')), true);
    const report = JSON.parse(readFileSync(reportPath, 'utf8'));
    assert.equal(report.tasks[0].gates.find((g: { name: string }) => g.name === 'phi-monotone').passed, false);
    assert.equal(report.tasks[0].written, undefined);
  });

  it('a Python grader that disagrees with the independent TypeScript grader', async () => {
    const t = broken((x) => { x.taskFiles['tests/progress.py'] = x.taskFiles['tests/progress.py'].replace('        return 0.5\n', '        return 1.0\n'); });
    assert.ok(t.taskFiles['tests/progress.py'].includes('return 1.0\n    return matched'), 'the mutation applied');
    const r = await runGates(t, { probes: (name) => name === 'reversed-rows' });
    assert.equal(gate(r, 'gaming-probes')!.passed, false);
    assert.match(gate(r, 'gaming-probes')!.detail, /reversed-rows: graders disagree on node clean: progress.py gives 1, the TypeScript grader 0.5/);
  });

  it('expected answers leaked into the agent workspace', async () => {
    const t = broken((x) => { x.taskFiles['app/data/notes.json'] = x.taskFiles['tests/progress.json']; });
    const r = await runGates(t, { probes: false });
    assert.equal(gate(r, 'no-leak')!.passed, false);
    assert.match(gate(r, 'no-leak')!.detail, /app\/data\/notes.json/);
  });
});

describe('tbrl validate on a Tev task re-runs the generation gates from its recipe', () => {
  it('passes an untouched task, and fails one whose hidden grader was edited or whose recipe is gone', { timeout: 240_000 }, async () => {
    const t = synthesize({ domain: 'log-forensics', tier: 'unit', seed: 21 });
    const { dir } = await writeSynthesizedTask(t, join(scratch, 'revalidate'), 'harbor');

    const ok = await validateTask(dir, { staticOnly: true });
    assert.equal(ok.tev.status, 'passed', ok.tev.message);
    assert.ok((ok.tev.probes ?? 0) >= 14, `at least 14 gaming probes re-run, got ${ok.tev.probes}`);
    assert.ok((ok.tev.gates ?? 0) > 0);
    assert.equal(ok.valid, true, ok.problems.join('\n'));

    // An edited grader is not what the gates vouched for: rejected before any gate runs.
    const grader = join(dir, 'tests', 'progress.py');
    writeFileSync(grader, readFileSync(grader, 'utf8').replace(/\n$/, '\nprint("phi": 1)\n'));
    const edited = await validateTask(dir, { staticOnly: true });
    assert.equal(edited.tev.status, 'failed');
    assert.match(edited.tev.message ?? '', /tests\/progress\.py differs from what log-forensics\/unit\/seed 21 generates/);
    assert.equal(edited.valid, false);
    assert.ok(edited.problems.some((p) => p.startsWith('tev: ')));

    unlinkSync(join(dir, 'tests', 'synth.json'));
    const noRecipe = await validateTask(dir, { staticOnly: true });
    assert.equal(noRecipe.tev.status, 'failed');
    assert.match(noRecipe.tev.message ?? '', /tests\/synth\.json is missing/);

    // An ordinary task has no Tev stage.
    const plain = await validateTask('examples/hello-world', { staticOnly: true });
    assert.equal(plain.tev.status, 'skipped');
  });
});
