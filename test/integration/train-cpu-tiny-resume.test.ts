// A Ray worker lost mid-training (issue 19, "Bad input and faults"): a cpu-tiny job on a real local
// Ray head trains in a Ray actor; the test SIGKILLs that actor's process once the job has written its
// step-1 checkpoint. The driver starts a new actor that resumes from that checkpoint, and the job
// finishes every step. (A worker lost with no restarts left or no checkpoint fails with
// WorkerLostError: trainer-bridge/tests/test_supervise.py.) Needs .venv/train, the model and Docker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { submitTraining } from '../../src/core/trainer/submit';
import { parseMetrics } from '../../src/core/trainer/metrics';
import { lastCheckpoint } from '../../src/core/trainer/fetch';
import { REPO, scratch } from '../unit/trainer-fixtures';
import { RAY_DASHBOARD_URL, RayHeadForFile } from '../helpers/ray';

const head = new RayHeadForFile(RAY_DASHBOARD_URL);
const client = head.client;
const TRAIN_PYTHON = join(REPO, '.venv', 'train', 'bin', 'python');
const TBRL_CLI = `${join(REPO, 'node_modules', '.bin', 'tsx')} ${join(REPO, 'src', 'cli', 'main.ts')}`;
const root = scratch('tbrl-cpu-tiny-resume-');
before(() => {
  assert.ok(existsSync(TRAIN_PYTHON), `${TRAIN_PYTHON} is missing: bash scripts/setup.sh makes it`);
  head.start();
});

after(async () => {
  await head.stop();
  rmSync(root, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a training worker killed mid-job is replaced and resumes from the last checkpoint', async () => {
  const r = await submitTraining({
    cluster: { url: RAY_DASHBOARD_URL }, preset: 'cpu-tiny', algorithm: 'grpo', taskDirs: [], trajectories: [],
    overrides: ['tbrl.steps=3', 'tbrl.save_every=1', 'tbrl.group_size=2', 'tbrl.tasks_per_step=1', 'tbrl.max_turns=1', 'tbrl.max_new_tokens=8', 'tbrl.train_layers=2', 'tbrl.family_seeds=1', 'tbrl.max_restarts=1'],
    env: { TBRL_CLI, TBRL_CHECKPOINT_DIR: join(root, 'checkpoints') }, python: TRAIN_PYTHON, tag: `resume-${process.pid}-${Date.now()}`, localEnv: {},
  });
  head.track(r.submissionId);

  // Wait for the step-1 checkpoint, then kill the worker that wrote it (not the driver).
  let killed: number | undefined;
  const deadline = Date.now() + 1_200_000; // a model load alone takes minutes on a loaded 2-core machine
  while (killed === undefined) {
    assert.ok(Date.now() < deadline, 'no step-1 checkpoint within 20 minutes');
    const job = await client.status(r.submissionId);
    assert.ok(!['SUCCEEDED', 'FAILED', 'STOPPED'].includes(job.status), `the job ended (${job.status}) before the worker could be killed:\n${(await client.logs(r.submissionId)).split('\n').slice(-20).join('\n')}`);
    const m = parseMetrics(await client.logs(r.submissionId));
    const worker = m.events.find((e) => e.event === 'worker');
    if (worker && m.events.some((e) => e.event === 'checkpoint' && e.step === 1)) {
      killed = Number(worker.pid);
      assert.ok(Number.isInteger(killed) && killed > 0 && killed !== process.pid, `worker pid ${String(worker.pid)}`);
      process.kill(killed, 'SIGKILL');
    } else await sleep(1000);
  }

  const job = await client.wait(r.submissionId, { timeoutMs: 1_200_000 });
  const log = await client.logs(r.submissionId);
  assert.equal(job.status, 'SUCCEEDED', log.split('\n').slice(-40).join('\n'));
  const m = parseMetrics(log);
  const lost = m.events.filter((e) => e.event === 'worker-lost');
  assert.equal(lost.length, 1, 'one worker loss');
  assert.match(String(lost[0].checkpoint), /step-0001$/);
  const workers = m.events.filter((e) => e.event === 'worker');
  assert.equal(workers.length, 2, 'a second worker was started');
  assert.notEqual(workers[1].pid, killed);
  assert.match(String(workers[1].resume), /step-0001$/);
  const resumed = m.events.find((e) => e.event === 'resume');
  assert.equal(resumed?.step, 1, 'the new worker starts at step 1');
  // Step 0 is never trained twice; steps 1 and 2 happen after the restart.
  const steps = (m.series['actor/grad_norm'] ?? []).map((p) => p.step);
  assert.equal(steps.filter((s) => s === 0).length, 1, `steps logged: ${steps.join(',')}`);
  assert.ok(steps.includes(2), `steps logged: ${steps.join(',')}`);
  const cp = lastCheckpoint(log);
  assert.equal(cp?.step, 3);
  const meta = JSON.parse(readFileSync(join(cp!.path, 'tbrl-checkpoint.json'), 'utf8')) as { resumed_from?: string };
  assert.match(String(meta.resumed_from), /step-0001$/);
});
