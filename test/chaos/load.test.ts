/**
 * Load: 16 concurrent oracle rollouts of examples/hello-world through runTask on this 2-core
 * machine (shared with other engineers' tests). The task image is built once first, so the
 * measurement is of rollouts, not of 16 identical builds. Tracing stays at its default (on), as
 * a training rollout runs.
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { runTask, type RunTaskResult } from '../../src/core/run/run-task';
import { runTaskOk } from '../helpers/run';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { loadTask } from '../../src/core/tasks/load';
import { oracleTurns } from '../../src/core/agent/oracle';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { chaosCase, recordMetric, recordRunId } from './helpers/chaos';

const EXAMPLE = resolve('examples/hello-world');
const N = Number(process.env.TBRL_CHAOS_ROLLOUTS ?? 16);
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-load-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

chaosCase(`${N} concurrent oracle rollouts of examples/hello-world through runTask (image prebuilt once)`, 'every rollout finishes with all oracle steps on disk in order, footer step count matches, reward 1; no container left', async () => {
  const provider = new DockerSandboxProvider();
  const task = await loadTask(EXAMPLE);
  const expectedSteps = oracleTurns(task).turns.length;
  // Warm-up: builds (or finds) the task image so the 16 share one cached image.
  const warm = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'warm'), policy: 'oracle', env: {}, sandboxProvider: provider, skipReward: true, trace: false });
  recordRunId(warm.runId);

  const t0 = Date.now();
  const settled = await Promise.allSettled(Array.from({ length: N }, (_, i) =>
    runTask({ taskDir: EXAMPLE, outDir: join(scratch, `r${i}`), policy: 'oracle', env: {}, sandboxProvider: provider })));
  const wallMs = Date.now() - t0;
  const results: RunTaskResult[] = [];
  const failures: string[] = [];
  for (const [i, s] of settled.entries()) {
    const error = s.status === 'fulfilled' ? s.value.error : s.reason;
    if (!error && s.status === 'fulfilled') results.push(s.value.result);
    else failures.push(`r${i}: ${String((error as Error).message).split('\n')[0]}`);
    if (s.status === 'fulfilled') recordRunId(s.value.result.runId);
  }
  assert.deepEqual(failures, []);

  let totalSteps = 0;
  const rewards: number[] = [];
  for (const r of results) {
    const t = await readTrajectory(r.trajectoryPath);
    assert.ok(t.footer, `${r.runId}: no footer`);
    assert.equal(t.truncated, false);
    assert.equal(t.steps.length, expectedSteps, `${r.runId}: ${t.steps.length} of ${expectedSteps} steps on disk`);
    assert.equal(t.footer!.steps, t.steps.length);
    assert.deepEqual(t.steps.map((s) => s.index), [...Array(expectedSteps).keys()]);
    assert.deepEqual(t.warnings.filter((w) => !/no trailing newline/.test(w)), []);
    rewards.push(t.footer!.reward?.tests ?? -1);
    totalSteps += t.steps.length;
  }
  assert.ok(rewards.every((x) => x === 1), `test rewards: ${rewards.join(', ')}`);

  const leaked: string[] = [];
  for (const r of [warm, ...results]) {
    const list = await provider.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${r.runId}`] } });
    leaked.push(...list.map((c) => `${r.runId} ${c.Id.slice(0, 12)}`));
  }
  assert.deepEqual(leaked, []);

  const perMin = (N / wallMs) * 60_000;
  const stepsPerSec = totalSteps / (wallMs / 1000);
  const tracing = results.filter((r) => r.header.sandbox?.tracing.available).length;
  recordMetric('load', `${N} rollouts in ${(wallMs / 1000).toFixed(1)} s: ${perMin.toFixed(1)} rollouts/min, ${stepsPerSec.toFixed(2)} steps/s (${totalSteps} steps, tracing on in ${tracing}/${N})`);
  return `${N}/${N} finished, ${totalSteps} steps (${expectedSteps} each, none lost), reward 1 ×${N}, 0 containers left; ${(wallMs / 1000).toFixed(1)} s wall → ${perMin.toFixed(1)} rollouts/min, ${stepsPerSec.toFixed(2)} steps/s; tracing on in ${tracing}/${N}`;
}, { timeout: 420_000 });
