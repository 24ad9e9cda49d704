// cpu-tiny end to end on a real local Ray head: `train submit` trains SmolLM2-135M for one step
// through the env-server (real Docker), streams metrics, writes a checkpoint; `train fetch` brings it
// back as a GGUF. Needs .venv/train and the model (scripts/setup.sh); the head is scripts/ray.sh's
// (TBRL_RAY_DASHBOARD_PORT), started here when nothing is up.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { submitTraining } from '../../src/core/trainer/submit';
import type { SubmitOptions } from '../../src/core/trainer/submit';
import { parseMetrics } from '../../src/core/trainer/metrics';
import { fetchCheckpoint, lastCheckpoint } from '../../src/core/trainer/fetch';
import { REPO, scratch } from '../unit/trainer-fixtures';
import { RAY_DASHBOARD_URL, RayHeadForFile } from '../helpers/ray';

const URL_ = RAY_DASHBOARD_URL;
const head = new RayHeadForFile(URL_);
const client = head.client;
const TRAIN_PYTHON = join(REPO, '.venv', 'train', 'bin', 'python');
const TBRL_CLI = `${join(REPO, 'node_modules', '.bin', 'tsx')} ${join(REPO, 'src', 'cli', 'main.ts')}`;
const RUN = `${process.pid}-${Date.now()}`;
const root = scratch('tbrl-cpu-tiny-');
before(() => {
  assert.ok(existsSync(TRAIN_PYTHON), `${TRAIN_PYTHON} is missing: bash scripts/setup.sh makes it`);
  head.start();
});

after(async () => {
  await head.stop();
  rmSync(root, { recursive: true, force: true });
});

function options(overrides: string[]): SubmitOptions {
  return {
    cluster: { url: URL_ }, preset: 'cpu-tiny', algorithm: 'depgpo', taskDirs: [], trajectories: [], overrides,
    env: { TBRL_CLI, TBRL_CHECKPOINT_DIR: join(root, 'checkpoints') }, python: TRAIN_PYTHON, tag: RUN, localEnv: {},
  };
}

test('a bad cpu-tiny setting fails at once with the cause and the fix', async () => {
  const r = await submitTraining(options(['tbrl.stpes=1']));
  head.track(r.submissionId);
  // The wait covers Ray scheduling too, which waits for CPUs while another file's job holds them;
  // "at once" is what the log shows: the job failed before any model was loaded.
  const job = await client.wait(r.submissionId, { timeoutMs: 600_000 });
  assert.equal(job.status, 'FAILED');
  const log = await client.logs(r.submissionId);
  assert.match(log, /unknown cpu-tiny setting 'stpes'.*Fix: use one of .*steps/);
  assert.doesNotMatch(log, /parameters in/, 'no model was loaded');
});

test('cpu-tiny trains one step through the env-server, streams metrics, and its checkpoint comes back as GGUF', async () => {
  const r = await submitTraining(options(['tbrl.steps=1', 'tbrl.group_size=2', 'tbrl.tasks_per_step=1', 'tbrl.max_turns=1', 'tbrl.max_new_tokens=16', 'tbrl.family_seeds=1']));
  head.track(r.submissionId);
  const job = await client.wait(r.submissionId, { timeoutMs: 1_200_000 }); // the model load alone takes minutes on a loaded machine
  const log = await client.logs(r.submissionId);
  assert.equal(job.status, 'SUCCEEDED', log.split('\n').slice(-30).join('\n'));
  const c = parseMetrics(log).canonical();
  for (const k of ['rewardMean', 'passRate', 'gradNorm', 'depgpoFactorSpread', 'tokensPerSec'] as const) assert.equal(c[k].length, 1, `${k} has one point`);
  assert.ok(c.tokensPerSec[0].value > 0);
  const cp = lastCheckpoint(log);
  assert.ok(cp && cp.step === 1 && existsSync(join(cp.path, 'model.safetensors')), `checkpoint in the log: ${JSON.stringify(cp)}`);
  const fetched = await fetchCheckpoint({ client, jobId: r.submissionId, outDir: join(root, 'models'), python: TRAIN_PYTHON, dtype: 'f16' });
  assert.equal(readFileSync(fetched.gguf).subarray(0, 4).toString(), 'GGUF');
  assert.ok(existsSync(join(fetched.checkpoint, 'tbrl-checkpoint.json')));
});
