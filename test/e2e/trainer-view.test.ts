import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { QuickInput } from './pages/quick-input';
import { Notifications } from './pages/notifications';
import { TrainerView } from './pages/trainer-view';
import { RayJobsClient } from '../../src/core/trainer/jobs';
import { submitTraining } from '../../src/core/trainer/submit';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy';
import { REPO, loadVector, scratch, writeGroup } from '../unit/trainer-fixtures';
import { RAY_DASHBOARD_URL } from '../helpers/ray';

// The Trainer view and its commands in a real VS Code (code-server) against a real local Ray head:
// Connect to Cluster (address in settings, token in SecretStorage), Send Dataset uploading to the
// cluster's package store, the jobs list with statuses, Stop Job from the view and Open Job Logs.
// The editor reaches Ray through a recording proxy, so the test sees the token it really sends.
const RAY_URL = RAY_DASHBOARD_URL;
const TOKEN = `e2e-token-${process.pid}`;
const ray = new RayJobsClient({ url: RAY_URL });
const unique = `${process.pid}-${Date.now()}`;
let startedRay = false;
let proxy: RecordingProxy;
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let input: QuickInput;
let toasts: Notifications;
let view: TrainerView;
let workspace: string;
let runs: string[];
let finishedJob = '';
let heldJob = '';

function rayScript(cmd: 'start' | 'stop' | 'status'): number {
  return spawnSync(join(REPO, 'scripts', 'ray.sh'), [cmd], { stdio: cmd === 'status' ? 'ignore' : 'inherit' }).status ?? 1;
}

/** A dryrun job on the trajectories alone (no task: no env-server episode), straight to Ray. */
async function submitDryrun(tag: string, overrides: string[] = []): Promise<string> {
  const r = await submitTraining({ cluster: { url: RAY_URL }, preset: 'dryrun', algorithm: 'depgpo', taskDirs: [], trajectories: runs, overrides, tag: `e2e-trainer-view-${tag}-${unique}`, localEnv: {} });
  return r.submissionId;
}

function proxiedSince(mark: number): typeof proxy.requests {
  return proxy.requests.slice(mark);
}

before(async () => {
  requireTools();
  // A head someone else started is reused and left running; one started here is stopped at the end.
  if (rayScript('status') !== 0) {
    startedRay = true;
    assert.equal(rayScript('start'), 0, 'scripts/ray.sh start');
  }
  ensureVsix();
  workspace = scratch('tbrl-e2e-trainer-view-');
  // Trajectories of their own: the bundle Send Dataset uploads is new to the cluster.
  runs = writeGroup(join(workspace, 'runs'), loadVector('02-indirect-credit'), `run-${unique}`);
  finishedJob = await submitDryrun('finished');
  proxy = await startRecordingProxy(RAY_URL);
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  input = new QuickInput(page);
  toasts = new Notifications(page);
  view = new TrainerView(page);
  assert.equal((await ray.wait(finishedJob, { timeoutMs: 90_000 })).status, 'SUCCEEDED', `the dryrun job ${finishedJob}:\n${await ray.logs(finishedJob).catch(() => '')}`);
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await proxy?.close();
  for (const id of [finishedJob, heldJob].filter(Boolean)) {
    await ray.stop(id).catch(() => undefined);
    await ray.wait(id, { timeoutMs: 60_000 }).catch(() => undefined);
    await ray.delete(id).catch(() => undefined);
  }
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  if (startedRay) rayScript('stop');
});

test('Connect to Cluster keeps the address in settings and the token in SecretStorage; the view lists the jobs with their status', async () => {
  await wb.showView('TBRL Studio');
  await view.row('Not connected').waitFor({ timeout: 20_000 });
  const mark = proxy.requests.length;
  await wb.runCommand('TBRL: Connect to Cluster');
  await input.answer('Ray dashboard URL', proxy.url);
  await input.answer('Bearer token', TOKEN);
  await toasts.toast(`TBRL: connected to ${proxy.url}.`);

  const row = await view.waitForStatus(finishedJob, 'SUCCEEDED');
  assert.match(row, /SUCCEEDED · \d{4}-\d\d-\d\d \d\d:\d\d/);
  const sent = proxiedSince(mark);
  assert.ok(sent.some((r) => r.method === 'GET' && r.path === '/api/jobs/'), `the view listed the jobs: ${JSON.stringify(sent)}`);
  assert.deepEqual([...new Set(sent.map((r) => r.authorization))], [`Bearer ${TOKEN}`], 'every request carries the token');

  const settings = JSON.parse(readFileSync(join(workspace, '.vscode', 'settings.json'), 'utf8'));
  assert.equal(settings['tbrl.trainer.url'], proxy.url);
  for (const file of [join(workspace, '.vscode', 'settings.json'), join(server.root, 'user-data', 'User', 'settings.json')]) {
    assert.ok(!existsSync(file) || !readFileSync(file, 'utf8').includes(TOKEN), `the token stays out of ${file}`);
  }
  await wb.screenshot('trainer-view-connected');
});

test('a Connect to an unreachable address says so and leaves the working connection and its token alone', async () => {
  await wb.runCommand('TBRL: Connect to Cluster');
  await input.answer('Ray dashboard URL', 'http://127.0.0.1:9');
  await input.answer('Bearer token', 'a-token-for-the-wrong-cluster');
  await toasts.toast('Cannot reach the cluster at http://127.0.0.1:9');
  assert.equal(JSON.parse(readFileSync(join(workspace, '.vscode', 'settings.json'), 'utf8'))['tbrl.trainer.url'], proxy.url);
  const mark = proxy.requests.length;
  await wb.runCommand('TBRL: Refresh Jobs');
  const deadline = Date.now() + 20_000;
  while (proxiedSince(mark).length === 0 && Date.now() < deadline) await page.waitForTimeout(200);
  assert.ok(proxiedSince(mark).length > 0, 'the view asked the cluster again');
  assert.deepEqual([...new Set(proxiedSince(mark).map((r) => r.authorization))], [`Bearer ${TOKEN}`]);
  await view.waitForStatus(finishedJob, 'SUCCEEDED');
});

test('Send Dataset, connected, uploads the bundle to the cluster\'s package store', { timeout: 120_000 }, async () => {
  const mark = proxy.requests.length;
  await wb.runCommand('TBRL: Send Dataset');
  await input.pick('Send Dataset: preset', 'dryrun');
  // grpo: the jobs of this file submit depgpo bundles of the same runs, already on the cluster.
  await input.pick('Send Dataset: algorithm', 'grpo');
  await input.answer('Send Dataset: filter trajectories', '');
  await input.answer('Send Dataset: trajectories (3 runs)');
  await input.answer('Send Dataset: overrides');
  const toast = await toasts.toast(/TBRL: (uploaded|already on the cluster:) gcs:\/\//, 60_000);
  const text = await toast.innerText();
  const uri = /gcs:\/\/_ray_pkg_[0-9a-f]+\.zip/.exec(text)?.[0];
  assert.ok(uri, text);
  assert.match(text, /TBRL: uploaded gcs:/, 'a bundle of new trajectories is not on the cluster yet');
  assert.match(text, /0 task\(s\), 3 trajectory\(ies\)/);
  const pkgPath = `/api/packages/gcs/${uri.slice('gcs://'.length)}`;
  assert.deepEqual(proxiedSince(mark).filter((r) => r.path === pkgPath).map((r) => r.method), ['GET', 'PUT'], 'asked whether the package exists, then uploaded it');
  assert.equal(await ray.packageExists(uri), true, `Ray has ${uri}`);
});

test('Stop Job from the view stops a running job; the view follows it to STOPPED by itself', { timeout: 150_000 }, async () => {
  heldJob = await submitDryrun('held', ['tbrl.dryrun.hold_sec=300']);
  const deadline = Date.now() + 90_000;
  while ((await ray.status(heldJob)).status !== 'RUNNING' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
  assert.equal((await ray.status(heldJob)).status, 'RUNNING');
  await wb.runCommand('TBRL: Refresh Jobs');
  await view.waitForStatus(heldJob, 'RUNNING');
  await view.inlineAction(heldJob, 'Stop Job');
  await toasts.toast(`TBRL: stopping ${heldJob}.`);
  assert.equal((await ray.wait(heldJob, { timeoutMs: 60_000 })).status, 'STOPPED');
  // No refresh by hand: the view asks again while it shows an active job.
  await view.waitForStatus(heldJob, 'STOPPED', 20_000);
  await wb.screenshot('trainer-view-stopped');
});

test('Open Job Logs opens the job\'s log read-only, from its row and from the palette', { timeout: 60_000 }, async () => {
  await view.open(finishedJob);
  const editor = page.locator('.editor-instance .monaco-editor').first();
  await page.locator('.tabs-container .tab', { hasText: `${finishedJob}.log` }).waitFor({ timeout: 20_000 });
  await page.locator('.view-lines', { hasText: 'dryrun finished' }).first().waitFor({ timeout: 20_000 });
  await editor.click();
  await page.keyboard.type('x');
  await page.locator('.monaco-editor-overlaymessage', { hasText: 'Cannot edit in read-only editor' }).waitFor({ timeout: 10_000 });

  await wb.runCommand('TBRL: Open Job Logs');
  await input.pick('Open Job Logs: job', heldJob);
  await page.locator('.tabs-container .tab', { hasText: `${heldJob}.log` }).waitFor({ timeout: 20_000 });
  await page.locator('.view-lines', { hasText: 'holding for 300 s' }).first().waitFor({ timeout: 20_000 });
  await wb.screenshot('trainer-view-logs');
});
