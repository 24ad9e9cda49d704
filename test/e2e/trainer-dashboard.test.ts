import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench } from './session';
import { Workbench } from './pages/workbench';
import { TrainerDashboardPage } from './pages/trainer-dashboard';
import { submitTraining } from '../../src/core/trainer/submit';
import { parseMetrics } from '../../src/core/trainer/metrics';
import { REPO, loadVector, makeTask, scratch, writeGroup } from '../unit/trainer-fixtures';
import { RAY_DASHBOARD_URL, RayHeadForFile } from '../helpers/ray';

// The training dashboard in a real VS Code (code-server) against a real local Ray head running the
// dryrun preset: the job reaches SUCCEEDED on the page and its metrics are drawn as charts.
const URL_ = RAY_DASHBOARD_URL;
const head = new RayHeadForFile(URL_);
const client = head.client;
let submissionId = '';
const submittedByEditor: string[] = [];
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let workspace: string;

before(async () => {
  requireTools();
  head.start();
  ensureVsix();
  workspace = scratch('tbrl-e2e-trainer-');
  // Named after the trajectories' task id, so Start Training pre-picks it from the picked runs.
  const task = makeTask(workspace, 'vector-task');
  const runs = writeGroup(join(workspace, 'runs'), loadVector('02-indirect-credit'));
  const r = await submitTraining({
    cluster: { url: URL_ },
    preset: 'dryrun',
    algorithm: 'depgpo',
    taskDirs: [task],
    trajectories: runs,
    env: { TBRL_CLI: `${join(REPO, 'node_modules', '.bin', 'tsx')} ${join(REPO, 'src', 'cli', 'main.ts')}` },
    tag: `e2e-dashboard-${process.pid}-${Date.now()}`,
    localEnv: {},
  });
  submissionId = r.submissionId;
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  writeFileSync(join(workspace, '.vscode/settings.json'), JSON.stringify({ 'tbrl.trainer.url': URL_ }));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
});

after(async () => {
  await browser?.close();
  await server?.stop();
  for (const id of [submissionId, ...submittedByEditor]) head.track(id);
  await head.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('the dashboard of a dryrun job on a local Ray head shows SUCCEEDED, the log and a reward chart', async () => {
  await wb.runCommand('TBRL: Open Training Dashboard');
  await wb.pick(submissionId);
  const dash = new TrainerDashboardPage(wb.webview());
  await dash.waitForStatus('SUCCEEDED', 90_000);
  assert.equal(await dash.title(), submissionId);
  await dash.waitForChartPoints('rewardMean');
  const charts = await dash.charts();
  assert.deepEqual(charts.map((c) => c.id), ['rewardMean', 'passRate', 'entropy', 'gradNorm', 'depgpoFactorSpread']);
  const reward = charts.find((c) => c.id === 'rewardMean')!;
  assert.ok(reward.points >= 1 && reward.hasLine && reward.dots === reward.points, JSON.stringify(reward));
  assert.equal(charts.find((c) => c.id === 'entropy')!.dots, 0, 'the dryrun logs no entropy: that chart stays empty');
  // The page shows what the core parser reads from the job's full log.
  const last = parseMetrics(await client.logs(submissionId)).canonical().rewardMean.at(-1)!;
  assert.equal(reward.points, parseMetrics(await client.logs(submissionId)).canonical().rewardMean.length);
  assert.ok(reward.title.startsWith(`Reward (mean): ${last.value.toFixed(3)} @ step ${last.step}`), reward.title);
  assert.match(await dash.log(), /tbrl-metrics /);
  await wb.screenshot('trainer-dashboard');
});

test('Start Training through its quick picks submits the picked runs and task and opens their dashboard', async () => {
  const before = new Set((await client.list()).map((j) => j.submission_id));
  await wb.runCommand('TBRL: Start Training');
  await wb.pick('dryrun');
  await wb.pick('depgpo');
  // Each Enter waits for its own question: an Enter sent while the next box is still opening is lost.
  const answer = async (title: string, row?: string): Promise<void> => {
    await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).first().waitFor({ timeout: 20_000 });
    if (row) await page.locator('.quick-input-list .monaco-list-row', { hasText: row }).first().waitFor({ timeout: 20_000 });
    await page.keyboard.press('Enter');
  };
  await answer('filter trajectories'); // no filter: every finished run
  await answer('trajectories (3 runs)', 'run-0'); // the pre-picked runs
  await answer('Start Training: tasks', 'vector-task'); // the pre-picked task (the one the runs ran)
  await answer('overrides'); // none
  const deadline = Date.now() + 60_000;
  let id: string | undefined;
  while (!id && Date.now() < deadline) {
    id = (await client.list()).map((j) => j.submission_id).find((x) => !before.has(x));
    if (!id) await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(id, 'a new job was submitted');
  submittedByEditor.push(id);
  const job = await client.status(id);
  assert.equal(job.metadata?.preset, 'dryrun');
  assert.equal(job.metadata?.algorithm, 'depgpo');
  assert.equal(job.metadata?.trajectories, '3');
  assert.equal(job.metadata?.tasks, '1');
  const dash = new TrainerDashboardPage(wb.webview());
  await page.locator('.tab', { hasText: `Training: ${id}` }).first().waitFor({ timeout: 20_000 });
  await dash.frame.locator('.header .title', { hasText: id }).waitFor({ timeout: 20_000 });
  await dash.waitForStatus('SUCCEEDED', 90_000);
  await dash.waitForChartPoints('depgpoFactorSpread');
});

test('the first-use walkthrough lists its four steps and shows the Docker step\'s markdown', async () => {
  await wb.runCommand('Welcome: Open Walkthrough...');
  await wb.pick('Get started with TBRL Studio');
  for (const title of ['Set up Docker', 'Run the example task', 'Open the trace graph', 'Connect a cluster']) {
    await page.locator('.getting-started-step', { hasText: title }).first().waitFor({ timeout: 20_000 });
  }
  await page.locator('.getting-started-step', { hasText: 'Set up Docker' }).first().click();
  await wb.webview().locator('h1', { hasText: 'Set up Docker' }).waitFor({ timeout: 20_000 });
  await wb.screenshot('walkthrough');
});
