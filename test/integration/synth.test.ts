/**
 * A synthesised Tev task in a real container: the image builds offline from the stand-in base
 * (the SQLite database is built inside it), the untouched workspace has Φ = 0 and fails the strict
 * verifier, Φ read through evaluateProgress rises along the reference steps to 1, the reference
 * passes (PPRS R = 1.25), and a replaying pipeline (a shortcut probe) fails with Φ = 0; the hidden
 * suites' text is nowhere in the container. Harbor versions of two more domains (a safetensors
 * shard; a manifest and SQLite) pass through their reward file, and `runTask` (oracle policy) records Φ on every step
 * and PPRS in the footer.
 */
import { runTaskOk } from '../helpers/run';
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerProvider, LABEL_RUN } from '../../src/core/sandbox/index';
import { synthesize } from '../../src/core/synth/generate';
import { writeSynthesizedTask } from '../../src/core/synth/write';
import { applyPprs, createProgressRecorder, evaluateProgress } from '../../src/core/synth/progress';
import { SOLVER_PRELUDE } from '../../src/core/synth/solver-program';
import { runTests } from '../../src/core/reward/tests';
import { loadTask } from '../../src/core/tasks/load';
import { readTrajectory } from '../../src/core/trajectory/reader';
import type { Sandbox } from '../../src/core/sandbox/types';
import type { RewardRecord, StepRecord } from '../../src/core/trajectory/schema';

const testReward = (tests: number | undefined): RewardRecord => ({ tests, weights: { tests: 1, judge: 0 }, total: tests ?? 0 });
const stepRecord = (index: number): StepRecord => ({ type: 'step', index, startedAt: new Date().toISOString(), durationMs: 0, candidates: [], chosenText: '', actions: [], parseErrors: [], usage: { promptTokens: 0, completionTokens: 0 }, todos: [], scratchpad: [] });

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-synth-it-'));
const provider = createDockerProvider();
const runId = `synth-it-${process.pid}`;

after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  const left = await provider.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`] } });
  assert.equal(left.length, 0, 'the test removed its container');
});

describe('Tev task in a real container', () => {
  it('reference passes with Φ rising to 1; the empty agent and a replaying pipeline do not pass', { timeout: 240_000 }, async () => {
    const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 6, faultCount: 4 });
    const dir = join(scratch, t.id);
    await writeSynthesizedTask(t, dir, 'terminal-bench');
    const task = await loadTask(dir);
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await provider.create({ image: { kind: 'dockerfile', context: dir, dockerfile: 'Dockerfile' }, runId, network: false });
      const sb = sandbox;
      const db = await sb.exec('ls /app/data/products.db /app/setup /app/data/products.sql 2>&1; true');
      assert.match(db.output, /\/app\/data\/products\.db/);
      assert.match(db.output, /cannot access '?\/app\/setup/, 'the build step and the SQL script are gone from the image');
      assert.match(db.output, /cannot access '?\/app\/data\/products\.sql/);

      // Hidden suites are sealed: neither the metamorphic rewrite, nor the stale-output
      // counterfactual (its extra record and the report it must give), nor the held-out answer is
      // anywhere in the container the agent works in.
      const verifierSpec = JSON.parse(/SPEC = json\.loads\(r'''(.*)'''\)/.exec(t.taskFiles['tests/test_outputs.py'])![1]) as { extra: { line: string; report: { rows: string[][] } } };
      const progressSpec = JSON.parse(t.taskFiles['tests/progress.json']) as { pipeline: { expected_report: { rows: string[][] } } };
      // Report rows only the hidden suites know: not in the true report, and (by chance) not in a visible input such as the stale cache.
      const visible = Object.values(t.inputs).join('\n');
      const hiddenRows = (rows: string[][]) => rows.map((r) => r.join(',')).filter((row) => !t.expected.report.rows.some((e) => e.join(',') === row) && !visible.includes(row));
      const sealed = ['check_renamed_shards', 'check_extra_record_over_stale_outputs', 'def follows_holdout', verifierSpec.extra.line, ...hiddenRows(verifierSpec.extra.report.rows), ...hiddenRows(progressSpec.pipeline.expected_report.rows)];
      assert.ok(sealed.length >= 6 && sealed.every((s) => typeof s === 'string' && s.length > 8), JSON.stringify(sealed));
      await sb.writeFile('/tmp/sealed.txt', sealed.join('\n') + '\n');
      const grep = await sb.exec('grep -rlF -f /tmp/sealed.txt / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null | grep -v "^/tmp/sealed.txt$"; rm /tmp/sealed.txt; true');
      assert.equal(grep.output.trim(), '', `hidden-suite text visible to the agent in: ${grep.output}`);

      const empty = await evaluateProgress(sb, task);
      assert.ok(empty);
      assert.equal(empty.phi, 0, 'the untouched workspace has no credit: every node needs an output the agent writes');
      const emptyTests = await runTests({ task, sandbox: sb });
      assert.equal(emptyTests.tests, 0, emptyTests.log.slice(-800));
      assert.deepEqual(applyPprs(testReward(emptyTests.tests), empty.phi).pprs, { pass: false, phi: 0, lambda: 0.25 });

      // The run loop's hook: Φ recorded on each step record, PPRS on the final reward.
      const recorder = createProgressRecorder(sb, task);
      const steps: StepRecord[] = [];
      for (const [i, step] of t.steps.entries()) {
        await sb.writeFile(`/tmp/ref-step-${i}.sh`, `${SOLVER_PRELUDE}\n${step.script}\n`);
        const r = await sb.exec(`bash /tmp/ref-step-${i}.sh && rm /tmp/ref-step-${i}.sh`);
        assert.equal(r.exitCode, 0, r.output);
        const record = stepRecord(i);
        await recorder.onStep(record);
        steps.push(record);
      }
      const phis = steps.map((s) => s.phi);
      assert.deepEqual(phis, [0.3, 0.55, 0.75, 1]);
      const passed = await runTests({ task, sandbox: sb });
      assert.equal(passed.tests, 1, passed.log.slice(-1500));
      assert.ok(passed.outcomes?.some((o) => o.name.includes('test_metamorphic_renamed_shards') && o.status === 'passed'));
      const final = await recorder.finish(testReward(passed.tests));
      assert.deepEqual(final.pprs, { pass: true, phi: 1, lambda: 0.25 });
      assert.equal(final.total, 1.25);
      const leftovers = await sb.exec('ls -a /tmp | grep -c tbrl-progress || true');
      assert.equal(leftovers.output.trim(), '0', 'the grader is removed from the container after each evaluation');

      // Gaming probe: keep the right outputs but make the pipeline replay them: a shortcut earns Φ = 0.
      await sb.exec('mkdir -p /app/answers && cp /app/out/* /app/answers/ && printf \'#!/bin/bash\\nmkdir -p "$2" && cp /app/answers/* "$2"/\\n\' > /app/pipeline.sh');
      const probe = await evaluateProgress(sb, task);
      assert.equal(probe!.phi, 0);
      assert.deepEqual(probe!.credit, { clean: 0, enriched: 0, report: 0, summary: 0, pipeline: 0 });
      const probeTests = await runTests({ task, sandbox: sb });
      assert.equal(probeTests.tests, 0);
    } finally {
      await sandbox?.close();
    }
  });

  for (const domain of ['quantum', 'infra-ops', 'log-forensics']) it(`a Harbor-format ${domain} task (safetensors, manifest + SQLite, or a stripped binary built in the image; every fault class incl. the domain's own two, unit drift and a provider-qualified id, a deprecated manifest key or a local-time index hour): solve.sh passes through the reward file, Φ = 1`, { timeout: 180_000 }, async () => {
    const t = synthesize({ domain, tier: 'unit', seed: 8, faultCount: 8 });
    const dir = join(scratch, `${t.id}-harbor`);
    await writeSynthesizedTask(t, dir, 'harbor');
    const task = await loadTask(dir);
    assert.equal(task.format, 'harbor');
    assert.ok(readFileSync(join(dir, 'tests/test.sh'), 'utf8').includes('reward.txt'));
    let sandbox: Sandbox | undefined;
    try {
      if (!('context' in task.environment)) throw new Error('expected a Dockerfile environment');
      sandbox = await provider.create({ image: { kind: 'dockerfile', context: task.environment.context, dockerfile: task.environment.dockerfile }, runId, network: false });
      const sb = sandbox;
      assert.equal((await runTests({ task, sandbox: sb })).tests, 0);
      if (task.solution?.kind !== 'script') throw new Error('expected solution/solve.sh');
      await sb.writeFile('/tmp/solve.sh', readFileSync(task.solution.path));
      const solved = await sb.exec('bash /tmp/solve.sh');
      assert.equal(solved.exitCode, 0, solved.output);
      const progress = await evaluateProgress(sb, task);
      assert.equal(progress!.phi, 1);
      assert.deepEqual(progress!.gated, { clean: 1, enriched: 1, report: 1, summary: 1, pipeline: 1 });
      const tests = await runTests({ task, sandbox: sb });
      assert.equal(tests.tests, 1, tests.log.slice(-1500));
    } finally {
      await sandbox?.close();
    }
  });

  it('`runTask` with the oracle policy records Φ on every step and PPRS in the footer', { timeout: 180_000 }, async () => {
    const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 6, faultCount: 4 });
    const dir = join(scratch, `${t.id}-run`);
    await writeSynthesizedTask(t, dir, 'terminal-bench');
    const result = await runTaskOk({ taskDir: dir, policy: 'oracle', outDir: join(scratch, 'run'), trace: false, env: {} });
    const trajectory = await readTrajectory(result.trajectoryPath);
    assert.equal(trajectory.footer?.endReason, 'finished');
    const phis = trajectory.steps.map((s) => s.phi);
    assert.ok(phis.every((p) => typeof p === 'number'), `Φ on every written step: ${JSON.stringify(phis)}`);
    assert.ok(phis.every((p, i) => i === 0 || p! >= phis[i - 1]!), `Φ never falls along the oracle: ${JSON.stringify(phis)}`);
    assert.equal(phis.at(-1), 1);
    assert.ok(phis.some((p) => p! > 0 && p! < 1), 'the oracle passes through partial states');
    assert.deepEqual(trajectory.footer?.reward?.pprs, { pass: true, phi: 1, lambda: 0.25 });
    assert.equal(trajectory.footer?.reward?.total, 1.25, 'R = 1[pass] + 0.25·Φ(s_T)');
    const left = await provider.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${trajectory.header.runId}`] } });
    assert.equal(left.length, 0);
  });
});
