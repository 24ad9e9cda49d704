/**
 * The gate server (gate-server.ts) must change how fast the Tev gates run, never what they find.
 *
 * 1. A program run through the server's python3 behaves as under the real interpreter: exit status,
 *    stdout/stderr, argv, sys.path[0], __name__, cwd, environment, stdin, death by signal, -m.
 * 2. The verifier runner (verifier-runner.ts) gives the same per-test verdicts as a real pytest session
 *    on the reference and every probe of a task of every domain, and leaves to pytest what only
 *    pytest can decide (fixtures, skips, a conftest.py next to the verifier).
 * 3. runGates on the warm runner (server + shared untouched workspace + two probes at a time) gives
 *    the same gate verdicts, reference Φ and per-probe verdicts and Φ as the original per-process
 *    runner, on a task of every domain. TBRL_GATE_EQUIV_SEEDS=1,2 and TBRL_GATE_EQUIV_PROBES=all
 *    widen it (slow: the per-process runner takes minutes per task on a loaded machine).
 * 4. Shared pipeline runs (gates.ts shareRuns) give the same gate verdicts, details and per-probe Φ
 *    as running every pipeline, on the probes that differ from the reference only in the pipeline,
 *    in out/ or in the data.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { DOMAINS } from '../../src/core/synth/domains';
import { synthesize } from '../../src/core/synth/generate';
import { closeGatePythons, runGates, sharedGatePython, verifyOnHost, verifyWithRunner, type GateReport, type HostRun } from '../../src/core/synth/gates';
import { buildProbes } from '../../src/core/synth/probes';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-gate-server-test-'));
after(async () => {
  await closeGatePythons();
  rmSync(scratch, { recursive: true, force: true });
});

const real = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();

describe('gate server python3', () => {
  it('runs programs exactly as the real interpreter does', async () => {
    const server = await sharedGatePython();
    assert.equal(server.mode, 'warm', 'the server starts on a host with python3 and cc');
    const script = join(scratch, 'prog.py');
    writeFileSync(script, [
      'import json, os, sys',
      'data = sys.stdin.read()',
      'print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": __file__, "cwd": os.getcwd(), "env": os.environ.get("GATE_X"), "stdin": data}))',
      'print("to stderr", file=sys.stderr)',
      'sys.exit(int(sys.argv[1]))',
    ].join('\n'));
    const cases: { argv: string[]; input?: string }[] = [
      { argv: [script, '0', 'a b'], input: 'hello\n' },
      { argv: [script, '7'] },
      { argv: ['-c', 'import sys; print(sys.argv, repr(sys.path[0])); sys.exit("message")', 'x'] },
      { argv: ['-c', 'raise ValueError("boom")'] },
      { argv: ['-c', 'import os, signal; print("before", flush=True); os.kill(os.getpid(), signal.SIGTERM)'] },
      { argv: ['-c', 'import atexit; atexit.register(lambda: print("at exit")); print("main")'] },
      { argv: ['-m', 'json.tool'], input: '{"b": 1, "a": [2]}' },
      { argv: ['-m', 'pytest', '--version'] },
    ];
    for (const c of cases) {
      const run = (env: Record<string, string>) => spawnSync('python3', c.argv, { cwd: scratch, input: c.input ?? '', encoding: 'utf8', env: { ...process.env, GATE_X: 'y', ...env } });
      const warm = run(server.env);
      const cold = run({ PATH: `${join(real, '..')}:${process.env.PATH}` });
      const label = c.argv.join(' ').slice(0, 60);
      assert.equal(warm.status, cold.status, `${label}: exit status`);
      assert.equal(warm.signal, cold.signal, `${label}: signal`);
      assert.equal(warm.stdout, cold.stdout, `${label}: stdout`);
      assert.equal(warm.stderr, cold.stderr, `${label}: stderr`);
    }
  });
});

describe('warm gates find what the per-process gates find', () => {
  const seeds = (process.env.TBRL_GATE_EQUIV_SEEDS ?? '3').split(',').map(Number);
  const allProbes = process.env.TBRL_GATE_EQUIV_PROBES === 'all';
  // One probe of each way a probe is run: files only, a pipeline that runs and appends junk, the
  // conftest/pytest.ini trick against the verifier, a patched reference pipeline (near miss), and
  // the fault-tied near miss of the task's first fault when it has one.
  const picked = new Set(['copy-inputs', 'replay-pipeline-with-input-echo', 'delete-tests', 'pipeline-ignores-output-dir', 'off-by-one-totals', 'kept-duplicates', 'ignored-late-arrivals', 'dropped-drifted-shard', 'ignored-unit-drift']);
  const verdicts = (r: GateReport) => ({ passed: r.passed, gates: r.gates.map((g) => [g.name, g.passed]), referencePhi: r.referencePhi, probes: r.probes });
  for (const domain of Object.keys(DOMAINS)) {
    for (const seed of seeds) {
      it(`${domain} seed ${seed}`, async () => {
        const t = synthesize({ domain, tier: 'unit', seed });
        const filter = allProbes ? undefined : (name: string) => picked.has(name);
        const warm = await runGates(t, { probes: filter });
        const cold = await runGates(t, { probes: filter, runner: 'process' });
        assert.deepEqual(verdicts(warm), verdicts(cold));
        const all = buildProbes({ spec: t.spec, world: t.draw.world, faults: t.draw.faults, inputs: t.inputs, cleanInputs: t.cleanInputs, expected: t.expected });
        assert.equal(warm.probes.length, allProbes ? all.length : all.filter((p) => picked.has(p.name)).length, 'every selected probe ran, in order');
        assert.deepEqual(warm.probes.map((p) => p.name), all.map((p) => p.name).filter((n) => allProbes || picked.has(n)));
        assert.equal(warm.passed, true, JSON.stringify(warm.gates.filter((g) => !g.passed)));
      });
    }
  }
});

describe('shared pipeline runs never change a verdict', () => {
  // Every probe over the finished reference runs the graders on the same input tree as the reference
  // did: a run shared by anything but the whole entry tree (a near miss differs only in ref_pipeline.py,
  // stale outputs only in out/) would hand a probe the reference's run and Φ = 1.
  const picked = new Set(['off-by-one-totals', 'reversed-rows', 'stale-outputs-real-pipeline', 'partial-write-looks-complete', 'pipeline-ignores-output-dir', 'pipeline-ignores-input-dir', 'replay-pipeline-with-input-echo', 'edited-inputs']);
  for (const domain of ['data-eng', 'quantum']) {
    it(`${domain}: shared and unshared runs give the same gates, reference Φ and per-probe Φ`, async () => {
      const t = synthesize({ domain, tier: 'unit', seed: 5 });
      const verdicts = (r: GateReport) => ({ passed: r.passed, gates: r.gates.map((g) => [g.name, g.passed, g.detail]), referencePhi: r.referencePhi, probes: r.probes });
      const shared = await runGates(t, { probes: (n) => picked.has(n) });
      const unshared = await runGates(t, { probes: (n) => picked.has(n), shareRuns: false });
      assert.deepEqual(verdicts(shared), verdicts(unshared));
      assert.equal(shared.passed, true, JSON.stringify(shared.gates.filter((g) => !g.passed)));
      const honest = shared.referencePhi.at(-1)!;
      for (const p of shared.probes) assert.ok(p.phi < honest, `${p.name}: Φ ${p.phi} below the reference's ${honest}`);
    });
  }
});

describe('the verifier runner decides as pytest does', () => {
  for (const domain of Object.keys(DOMAINS)) {
    it(`${domain}: every probe, per test`, async () => {
      const t = synthesize({ domain, tier: 'unit', seed: 3 });
      const r = await runGates(t, { compareVerifiers: true });
      assert.equal(r.passed, true, JSON.stringify(r.gates.filter((g) => !g.passed)));
      const comparisons = r.verifierComparisons ?? [];
      const all = buildProbes({ spec: t.spec, world: t.draw.world, faults: t.draw.faults, inputs: t.inputs, cleanInputs: t.cleanInputs, expected: t.expected });
      assert.equal(comparisons.length, all.length + 1, 'the reference and every probe were verified both ways');
      assert.deepEqual(r.verifierRuns, { runner: all.length + 1, pytest: 0 }, 'the runner decided every state of a generated task');
      for (const c of comparisons) {
        assert.equal(Object.keys(c.pytest).length, 6, `${c.state}: pytest reported all six tests`);
        assert.deepEqual(c.runner, c.pytest, `${c.state}: per-test verdicts`);
        assert.equal(c.runnerPassed, c.pytestPassed, `${c.state}: verdict`);
        assert.equal(c.gatesVia, 'runner', `${c.state}: the gates used the runner`);
        assert.equal(c.gatesPassed, c.pytestPassed, `${c.state}: the gates' verdict (runner stopping at the first failure)`);
      }
      assert.ok(comparisons.some((c) => !c.pytestPassed) && comparisons.some((c) => c.pytestPassed), 'both verdicts occur');
    });
  }

  it('leaves fixtures, skips and a conftest.py to pytest', async () => {
    const server = await sharedGatePython();
    assert.ok(server.verifierRunner, 'the runner is available on a host without pytest plugins');
    const host: HostRun = { python: 'python3', env: server.env, verifierRunner: server.verifierRunner };
    const workspace = (name: string, tests: string, extra: Record<string, string> = {}) => {
      const root = join(scratch, name);
      const files: Record<string, string> = { 'tests/pytest.ini': '[pytest]\n', 'tests/test_outputs.py': tests, ...extra };
      for (const [p, text] of Object.entries(files)) {
        mkdirSync(join(root, p, '..'), { recursive: true });
        writeFileSync(join(root, p), text);
      }
      mkdirSync(join(root, 'app'), { recursive: true });
      return { root, app: join(root, 'app'), tests: { 'tests/pytest.ini': '[pytest]\n', 'tests/test_outputs.py': tests } };
    };
    const plain = workspace('plain', 'import os\n\ndef test_a():\n    assert os.environ["PYTEST_CURRENT_TEST"].endswith("::test_a (call)")\n\ndef test_b():\n    assert 1 == 2\n\ndef helper():\n    raise SystemExit(0)\n\ndef test_c():\n    helper()\n');
    const direct = await verifyWithRunner(plain.root, plain.app, host);
    assert.deepEqual(direct?.tests, { test_a: 'passed', test_b: 'failed', test_c: 'failed' });
    assert.equal(direct?.passed, false);
    const viaGate = await verifyOnHost(plain.root, plain.app, host, plain.tests);
    assert.equal(viaGate.via, 'runner');
    assert.deepEqual(viaGate.tests, { test_a: 'passed', test_b: 'failed' }, 'the gates stop at the first failure');
    assert.equal(viaGate.passed, false);
    const real = await verifyOnHost(plain.root, plain.app, { ...host, verifierRunner: undefined }, plain.tests);
    assert.deepEqual(real.tests, direct?.tests, 'pytest agrees, SystemExit in a test included');
    for (const [name, body] of [['fixture', 'def test_a(tmp_path):\n    pass\n'], ['skip', 'import pytest\n\ndef test_a():\n    pytest.skip("no")\n'], ['marked', 'import pytest\n\n@pytest.mark.xfail\ndef test_a():\n    assert False\n'], ['empty', 'X = 1\n']] as const) {
      const w = workspace(name, body);
      assert.equal(await verifyWithRunner(w.root, w.app, host), undefined, `${name}: undecided`);
      const v = await verifyOnHost(w.root, w.app, host, w.tests);
      assert.equal(v.via, 'pytest', `${name}: pytest decides`);
    }
    const skipped = await verifyOnHost(join(scratch, 'skip'), join(scratch, 'skip', 'app'), host, workspace('skip2', 'import pytest\n\ndef test_a():\n    pytest.skip("no")\n').tests);
    assert.equal(skipped.passed, true, 'a skipped test passes under pytest, as the gates see it');
    // A conftest.py beside the verifier could change anything: the gates run pytest.
    const withConftest = workspace('conftest', 'def test_a():\n    assert False\n', { 'tests/conftest.py': 'import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_collection_modifyitems(items):\n    items.clear()\n' });
    const v = await verifyOnHost(withConftest.root, withConftest.app, host, withConftest.tests);
    assert.equal(v.via, 'pytest');
    assert.equal(v.passed, false, 'pytest: no tests collected is a failure (exit 5)');
  });
});
