/**
 * `tbrl eval --ray` on a real local Ray cluster: a head and two worker nodes (`ray start`, own ports,
 * the `docker` resource on the workers). Mid-job one worker's raylet is SIGKILLed: Ray re-runs the
 * trials that were running there on the other worker, and every trial is recorded exactly once.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeEvalTasks } from '../helpers/eval-fixture';
import { startLocalRayCluster, type LocalRayCluster } from '../helpers/ray-cluster';
import { runEvalJob } from '../../src/core/eval/run-job';
import type { JobResults } from '../../src/core/eval/job';

const root = makeEvalTasks(['pass-a', 'pass-b', 'pass-c']);
let cluster: LocalRayCluster | undefined;
before(async () => {
  cluster = await startLocalRayCluster({ workers: 2, dockerSlots: 2 });
}, { timeout: 420_000 });
after(async () => {
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('a worker node lost mid-job: its running trials are re-queued, every trial recorded exactly once', { timeout: 240_000 }, async () => {
  const c = cluster!;
  const worker1 = c.rayletPid(1)!;
  const running: Array<{ trial: string; node: string; rayletPid: number }> = [];
  const ended: string[] = [];
  let killed: Promise<void> | undefined;
  let onWorker1AtKill: string[] = [];
  let killedAt = 0;
  const job = join(root, 'job');
  const { results } = await runEvalJob({
    inputs: [join(root, 'pass-a'), join(root, 'pass-b'), join(root, 'pass-c')],
    jobDir: job,
    run: { attempts: 2, policy: 'oracle' },
    concurrency: 4,
    rayCluster: {
      url: c.dashboard,
      concurrency: 4,
      onTrialRunning: (e) => {
        running.push(e);
        // Once worker 1 is busy with a trial, take its raylet away a moment later (mid-trial).
        if (e.rayletPid === worker1 && !killed) {
          killed = new Promise((r) => setTimeout(() => {
            onWorker1AtKill = running.filter((x) => x.rayletPid === worker1 && !ended.includes(x.trial)).map((x) => x.trial);
            killedAt = Date.now();
            c.killWorkerRaylet(1);
            r();
          }, 3000));
        }
      },
    },
    onEvent: (e) => {
      if (e.type === 'trial-end') ended.push(e.trial);
    },
  });
  await killed;
  assert.ok(onWorker1AtKill.length > 0, 'a trial was running on worker 1 when it was killed');
  assert.deepEqual([...ended].sort(), ['pass-a__1', 'pass-a__2', 'pass-b__1', 'pass-b__2', 'pass-c__1', 'pass-c__2'], 'each trial ends exactly once');
  assert.equal(results.complete, true);
  assert.equal(results.overall.outcomes.passed, 6, JSON.stringify(results.trials));
  const worker1Node = running.find((r) => r.rayletPid === worker1)!.node;
  const requeued: string[] = [];
  for (const trial of onWorker1AtKill) {
    const rec = JSON.parse(readFileSync(join(job, 'trials', trial, 'trial.json'), 'utf8')) as { node?: string; endedAt: string };
    const runs = running.filter((r) => r.trial === trial).length;
    if (rec.node === worker1Node) {
      // It ended on worker 1 just before the kill; its result was still on its way to the client.
      assert.ok(Date.parse(rec.endedAt) <= killedAt, `${trial} is recorded from worker 1 but ended after the kill (${rec.endedAt})`);
      assert.equal(runs, 1, `${trial} finished on worker 1 and was not run again`);
      continue;
    }
    requeued.push(trial);
    assert.ok(runs >= 2, `${trial} ran again after its node died`);
  }
  assert.ok(requeued.length > 0, `a trial cut off on worker 1 was re-run on the surviving node (running at the kill: ${onWorker1AtKill.join(', ')})`);
  assert.equal(readdirSync(join(job, 'trials')).length, 6);
  const onDisk = JSON.parse(readFileSync(join(job, 'results.json'), 'utf8')) as JobResults;
  assert.equal(onDisk.overall.passAtK[2], 1);
});
