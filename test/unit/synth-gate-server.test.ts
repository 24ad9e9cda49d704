/**
 * The gate server (gate-server.ts) must change how fast the Tev gates run, never what they find.
 *
 * 1. A program run through the server's python3 behaves as under the real interpreter: exit status,
 *    stdout/stderr, argv, sys.path[0], __name__, cwd, environment, stdin, death by signal, -m.
 * 2. runGates on the warm runner (server + shared untouched workspace + two probes at a time) gives
 *    the same gate verdicts, reference Φ and per-probe verdicts and Φ as the original per-process
 *    runner, on a task of every domain. TBRL_GATE_EQUIV_SEEDS=1,2 and TBRL_GATE_EQUIV_PROBES=all
 *    widen it (slow: the per-process runner takes minutes per task on a loaded machine).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { DOMAINS } from '../../src/core/synth/domains';
import { synthesize } from '../../src/core/synth/generate';
import { closeGatePythons, runGates, sharedGatePython, type GateReport } from '../../src/core/synth/gates';
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
