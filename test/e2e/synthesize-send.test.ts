import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { QuickInput } from './pages/quick-input';
import { Notifications } from './pages/notifications';
import { FileDialog } from './pages/file-dialog';
import { loadVector, readZipWithPython, scratch, writeGroup } from '../unit/trainer-fixtures';

// "TBRL: Synthesize Tasks" and "TBRL: Send Dataset" (not connected to a cluster) in a real VS Code
// (code-server): synthesised tasks pass their gates, land in the chosen folder and the Tasks view,
// and the dataset bundle saved to a zip holds exactly the tasks and trajectories the user picked.
const SEED = 3;
const TASKS = [`tev-log-forensics-unit-s${SEED}`, `tev-log-forensics-unit-s${SEED + 1}`];
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let input: QuickInput;
let toasts: Notifications;
let workspace: string;
let runs: string[];

before(async () => {
  requireTools();
  ensureVsix();
  workspace = scratch('tbrl-e2e-synth-');
  mkdirSync(join(workspace, 'synth'));
  // Rewards 0.5, 1 and 0 (the shared DepGPO vector): a reward filter picks two of the three.
  runs = writeGroup(join(workspace, 'runs'), loadVector('02-indirect-credit'), `run-${process.pid}`);
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  input = new QuickInput(page);
  toasts = new Notifications(page);
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('Synthesize Tasks writes the gated tasks into the chosen folder, with progress, and lists them in the Tasks view', { timeout: 240_000 }, async () => {
  await wb.runCommand('TBRL: Synthesize Tasks');
  await input.pick('Synthesize Tasks: domain', 'log-forensics');
  await input.pick('Synthesize Tasks: scale tier', 'unit');
  await input.answer('Synthesize Tasks: first seed', String(SEED));
  // A count that is not a whole number is refused inline, naming what is expected.
  const count = page.locator('.quick-input-widget', { hasText: 'Synthesize Tasks: how many tasks' });
  await count.waitFor({ timeout: 20_000 });
  await count.locator('input').first().fill('two');
  await page.locator('.quick-input-message', { hasText: 'A whole number >= 1' }).waitFor({ timeout: 10_000 });
  await input.answer('Synthesize Tasks: how many tasks', String(TASKS.length));
  await input.pick('Synthesize Tasks: task format', 'harbor');
  await new FileDialog(page).accept('Write tasks here', `${join(workspace, 'synth')}/`);

  // The gates take seconds per task: the progress names the task being gated while they run.
  await toasts.toast(`gating ${TASKS[0]} (1/2)`, 30_000);
  const done = await toasts.toast(/task\(s\) passed the gates and were written to/, 200_000);
  assert.match(await done.innerText(), new RegExp(`2/2 task\\(s\\) passed the gates and were written to ${join(workspace, 'synth')}`));

  for (const id of TASKS) {
    const dir = join(workspace, 'synth', id);
    for (const f of ['task.toml', 'instruction.md', 'environment/Dockerfile', 'tests/test.sh', 'tests/test_weights.json', 'tests/progress.json', 'tests/gates.json', 'solution/solve.sh']) {
      assert.ok(existsSync(join(dir, f)), `${id}/${f}`);
    }
    assert.equal(JSON.parse(readFileSync(join(dir, 'tests/gates.json'), 'utf8')).passed, true, `${id} passed its gates`);
  }
  const report = JSON.parse(readFileSync(join(workspace, 'synth', 'synth-report.json'), 'utf8'));
  assert.deepEqual(report.tasks.map((t: { task: string; written?: string }) => [t.task, t.written]), TASKS.map((id) => [id, join(workspace, 'synth', id)]));
  assert.equal(report.domain, 'log-forensics');
  assert.equal(report.tier, 'unit');

  await wb.showView('TBRL Studio');
  const rows = await wb.treeRows('Tasks');
  for (const id of TASKS) assert.ok(rows.some((r) => r.includes(`synth/${id}`) && r.includes('harbor')), `Tasks view: ${JSON.stringify(rows)}`);
  await wb.screenshot('synthesize-tasks');
});

test('Send Dataset, not connected, saves the bundle zip with the picked trajectories and task', { timeout: 120_000 }, async () => {
  await wb.runCommand('TBRL: Send Dataset');
  await input.pick('Send Dataset: preset', 'dryrun');
  await input.pick('Send Dataset: algorithm', 'grpo');
  await input.answer('Send Dataset: filter trajectories', 'reward>=0.5');
  const trajectories = await input.checkedRows('Send Dataset: trajectories (3 runs)');
  assert.deepEqual(runs.map((r) => trajectories.find((t) => t.text.includes(join(r, 'trajectory.jsonl')))?.checked), [true, true, false], 'the filter pre-picks the runs with reward >= 0.5');
  await input.answer('Send Dataset: trajectories (3 runs)');
  // No task ran these trajectories, so none is pre-picked: pick the first synthesised one.
  const tasks = await input.checkedRows('Send Dataset: tasks');
  assert.deepEqual(tasks.map((t) => t.checked), [false, false], JSON.stringify(tasks));
  await input.toggle('Send Dataset: tasks', `synth/${TASKS[0]}`);
  await input.answer('Send Dataset: tasks');
  await input.answer('Send Dataset: overrides', 'trainer.total_training_steps=2');
  const dialog = new FileDialog(page);
  const zip = join(workspace, 'tbrl-dryrun.zip');
  // code-server's save dialog labels its button OK whatever the saveLabel.
  assert.equal(await dialog.value('OK'), zip, 'the bundle is offered a place in the project, named after the preset');
  await dialog.accept('OK');
  const saved = await toasts.toast(`bundle saved to ${zip}`, 60_000);
  assert.match(await saved.innerText(), /1 task\(s\), 2 trajectory\(ies\)/);

  const files = readZipWithPython(zip);
  const manifest = JSON.parse(files['manifest.json']);
  assert.equal(manifest.preset, 'dryrun');
  assert.equal(manifest.algorithm, 'grpo');
  assert.deepEqual(manifest.trajectories.map((t: { runId: string }) => t.runId), [`run-${process.pid}-0`, `run-${process.pid}-1`]);
  assert.deepEqual(manifest.tasks.map((t: { dir: string }) => t.dir), [`tasks/${manifest.tasks[0].id}`]);
  assert.match(manifest.tasks[0].id, new RegExp(TASKS[0]));
  assert.ok(files[`tasks/${manifest.tasks[0].id}/task.toml`], 'the task directory travels whole');
  assert.ok(!Object.keys(files).some((f) => f.includes(TASKS[1])), 'the task left unpicked stays out');
  assert.deepEqual(JSON.parse(files['overrides.json']).overrides, ['trainer.total_training_steps=2']);
  assert.equal(files['data/train.jsonl'].trim().split('\n').length, 1, 'one dataset row per task');
});
