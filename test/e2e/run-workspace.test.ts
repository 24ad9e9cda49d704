import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { QuickInput } from './pages/quick-input';
import { Notifications } from './pages/notifications';
import { FileDialog } from './pages/file-dialog';
import { startOpenAIServer, type OpenAIServer } from '../helpers/openai-server';

// "TBRL: Run Agent on Workspace" in a real VS Code (code-server) on a project with a devcontainer:
// a model served by the local OpenAI-compatible test server edits the copied workspace, the diff
// opens, and the user keeps the run as a task (which then validates), discards it, or applies it.
const BROKEN = 'status: broken\n';
const FIXED = 'status: fixed\n';
let server: CodeServer;
let model: OpenAIServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let input: QuickInput;
let toasts: Notifications;
let workspace: string;

before(async () => {
  requireTools();
  ensureVsix();
  model = await startOpenAIServer({
    // Every run gets the same two turns: the edit, then (once the conversation holds it) finish.
    respond: (req) => (req.messages.some((m) => m.role === 'assistant') ? '<finish>\nmessage: fixed\n</finish>' : '<bash>\ncmd: sed -i "s/broken/fixed/" status.txt\n</bash>'),
  });
  workspace = mkdtempSync(join(tmpdir(), 'tbrl-e2e-ws-'));
  mkdirSync(join(workspace, '.devcontainer'));
  writeFileSync(join(workspace, '.devcontainer/devcontainer.json'), JSON.stringify({ image: 'tbrl-standin/python:3', workspaceFolder: '/workspaces/proj' }));
  writeFileSync(join(workspace, 'status.txt'), BROKEN);
  mkdirSync(join(workspace, '.vscode'));
  writeFileSync(join(workspace, '.vscode/settings.json'), JSON.stringify({ 'tbrl.model.baseUrl': model.baseUrl, 'tbrl.model.name': 'test-model', 'tbrl.limits.maxSteps': 5 }));
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
  await model?.close();
  if (!workspace) return;
  // Run ids start with the project folder's name. Matched by prefix rather than by runs/ entries: a
  // run cut short when code-server stopped may have its container but no directory yet.
  const listed = spawnSync('docker', ['ps', '-a', '--filter', 'label=dev.tbrl.run', '--format', '{{.ID}} {{.Label "dev.tbrl.run"}}'], { encoding: 'utf8' }).stdout;
  const ids = listed.split('\n').map((l) => l.split(' ')).filter(([id, run]) => id && run?.startsWith(`${basename(workspace)}-`)).map(([id]) => id);
  if (ids.length) spawnSync('docker', ['rm', '-f', ...ids]);
  rmSync(workspace, { recursive: true, force: true });
});

function runDirs(): string[] {
  const runs = join(workspace, 'runs');
  return existsSync(runs) ? readdirSync(runs).sort((a, b) => statSync(join(runs, a)).mtimeMs - statSync(join(runs, b)).mtimeMs) : [];
}

/** Runs the agent through the command's questions and waits for the choice it offers afterwards. */
async function runAgent(): Promise<void> {
  const calls = model.calls;
  await wb.runCommand('TBRL: Run Agent on Workspace');
  await input.answer('What should the agent do', 'Set the status to fixed.');
  await input.answer('Verify command', 'grep -q fixed status.txt');
  // The offer of an earlier run may still be on screen: wait for this run's turns first.
  const deadline = Date.now() + 180_000;
  while (model.calls < calls + 2 && Date.now() < deadline) await page.waitForTimeout(250);
  const toast = await toasts.toast('The agent changed 1 file(s)', 180_000);
  assert.match(await toast.innerText(), /reward 1/);
  await page.locator('.tabs-container .tab', { hasText: 'Agent changes' }).first().waitFor({ timeout: 20_000 });
  const entry = page.locator('.multiDiffEntry', { hasText: 'status.txt' }).first();
  await entry.waitFor({ timeout: 20_000 });
  assert.equal(await entry.locator('.status').innerText(), '', 'an edited file is shown as modified, not as a rename or an addition');
  assert.equal(readFileSync(join(workspace, 'status.txt'), 'utf8'), BROKEN, 'nothing is written before the user applies');
  assert.ok(model.calls >= calls + 2, 'the model played the agent');
}

const taskName = (): string => `${basename(workspace)}-task`;

test('"Save as task…" writes a task from the run (instruction, devcontainer image, weighted test, final state as solution) that validates', { timeout: 300_000 }, async () => {
  await runAgent();
  await toasts.click('The agent changed 1 file(s)', 'Save as task…');
  const dialog = new FileDialog(page);
  assert.equal(await dialog.value('Save task here'), `${workspace}/`, 'the folder picker starts in the project');
  await dialog.accept('Save task here');
  assert.equal(await input.value('Name of the new task folder'), taskName());
  await input.answer('Name of the new task folder');
  const dir = join(workspace, taskName());
  await toasts.toast(`Saved the run as a task in ${dir}`);

  assert.match(readFileSync(join(dir, 'task.yaml'), 'utf8'), /Set the status to fixed\./, 'the instruction the user typed');
  const dockerfile = readFileSync(join(dir, 'Dockerfile'), 'utf8');
  assert.match(dockerfile, /^FROM tbrl-standin\/python:3$/m, 'the devcontainer\'s image');
  assert.match(dockerfile, /^COPY workspace\/ \/workspaces\/proj\/$/m);
  assert.equal(readFileSync(join(dir, 'workspace/status.txt'), 'utf8'), BROKEN, 'the starting state is the project before the run');
  assert.equal(existsSync(join(dir, 'workspace/runs')), false, 'the run output stays out of the task image');
  assert.match(readFileSync(join(dir, 'tests/test_outputs.py'), 'utf8'), /VERIFY = "grep -q fixed status.txt"/);
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'test_weights.json'), 'utf8')), { test_verify_command: 1 });
  const solution = readFileSync(join(dir, 'solution.sh'), 'utf8');
  const encoded = /base64 -d > \$'status\.txt' <<'TBRL_EOF'\n([\s\S]*?)\nTBRL_EOF/.exec(solution)?.[1];
  assert.equal(Buffer.from(encoded ?? '', 'base64').toString('utf8'), FIXED, `the run's final state is the reference solution:\n${solution}`);

  await wb.showView('TBRL Studio');
  const deadline = Date.now() + 20_000;
  let tasks = await wb.treeRows('Tasks');
  while (!tasks.some((t) => t.includes(taskName())) && Date.now() < deadline) {
    await page.waitForTimeout(500);
    tasks = await wb.treeRows('Tasks');
  }
  assert.ok(tasks.some((t) => t.includes(taskName())), `Tasks view: ${JSON.stringify(tasks)}`);

  // The oracle (the solution) must score 1 and the untouched workspace below 1.
  await toasts.click(`Saved the run as a task in ${dir}`, 'Validate');
  const verdict = await toasts.toast(new RegExp(`${taskName()}: (valid|INVALID)`), 240_000);
  assert.match(await verdict.innerText(), new RegExp(`${taskName()}: valid \\(oracle 1, empty agent 0\\)`));
  await wb.screenshot('run-workspace-saved-task-valid');
});

test('"Discard" (offered again after saving) leaves the project untouched and says so', async () => {
  await toasts.click('The agent changed 1 file(s)', 'Discard');
  const [run] = runDirs();
  await toasts.toast(`Discarded the agent's changes: ${basename(workspace)} is unchanged (the run stays in runs/${run})`);
  assert.equal(readFileSync(join(workspace, 'status.txt'), 'utf8'), BROKEN);
  assert.match(readFileSync(join(workspace, 'runs', run, 'changes.patch'), 'utf8'), /^\+status: fixed$/m, 'the run keeps the change it discarded');
});

test('the agent\'s change reaches the host file only on "Apply to workspace"', { timeout: 240_000 }, async () => {
  const before = new Set(runDirs());
  await runAgent();
  await toasts.click('The agent changed 1 file(s)', 'Apply to workspace');
  const deadline = Date.now() + 20_000;
  while (readFileSync(join(workspace, 'status.txt'), 'utf8') !== FIXED && Date.now() < deadline) await page.waitForTimeout(200);
  assert.equal(readFileSync(join(workspace, 'status.txt'), 'utf8'), FIXED);
  await toasts.toast('Applied the agent\'s changes to 1 file(s)');
  const run = runDirs().find((r) => !before.has(r));
  assert.ok(run, 'the apply run has its own run directory');
  assert.match(readFileSync(join(workspace, 'runs', run, 'changes.patch'), 'utf8'), /^\+status: fixed$/m);
});
