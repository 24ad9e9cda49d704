import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench } from './session';
import { Workbench } from './pages/workbench';
import { startOpenAIServer, type OpenAIServer } from '../helpers/openai-server';

// "TBRL: Run Agent on Workspace" in a real VS Code (code-server) on a project with a devcontainer:
// a model served by the local OpenAI-compatible test server edits the copied workspace, the diff
// opens, the host file is untouched until "Apply to workspace" writes the change.
let server: CodeServer;
let model: OpenAIServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let workspace: string;

before(async () => {
  requireTools();
  ensureVsix();
  model = await startOpenAIServer({
    respond: (_req, i) => (i === 0 ? '<bash>\ncmd: sed -i "s/broken/fixed/" status.txt\n</bash>' : '<finish>\nmessage: fixed\n</finish>'),
  });
  workspace = mkdtempSync(join(tmpdir(), 'tbrl-e2e-ws-'));
  mkdirSync(join(workspace, '.devcontainer'));
  writeFileSync(join(workspace, '.devcontainer/devcontainer.json'), JSON.stringify({ image: 'tbrl-standin/python:3', workspaceFolder: '/workspaces/proj' }));
  writeFileSync(join(workspace, 'status.txt'), 'status: broken\n');
  mkdirSync(join(workspace, '.vscode'));
  writeFileSync(join(workspace, '.vscode/settings.json'), JSON.stringify({ 'tbrl.model.baseUrl': model.baseUrl, 'tbrl.model.name': 'test-model', 'tbrl.limits.maxSteps': 5 }));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
});

afterEach(async (t) => {
  if (page && (t as unknown as { passed?: boolean }).passed === false) await wb.screenshot(`failed-${t.name.slice(0, 40).replace(/[^a-z0-9]+/gi, '-')}`);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
  const runs = workspace ? join(workspace, 'runs') : '';
  for (const run of runs && existsSync(runs) ? readdirSync(runs) : []) {
    const ids = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.tbrl.run=${run}`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    if (ids.length) spawnSync('docker', ['rm', '-f', ...ids]);
  }
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

async function answerInput(promptText: string, value: string): Promise<void> {
  const widget = page.locator('.quick-input-widget', { hasText: promptText });
  await widget.waitFor({ state: 'visible', timeout: 20_000 });
  await widget.locator('input').fill(value);
  await page.keyboard.press('Enter');
}

test('the agent\'s change shows as a diff and reaches the host file only on "Apply to workspace"', { timeout: 240_000 }, async () => {
  await wb.runCommand('TBRL: Run Agent on Workspace');
  await answerInput('What should the agent do', 'Set the status to fixed.');
  await answerInput('Verify command', 'grep -q fixed status.txt');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'The agent changed 1 file(s)' });
  await toast.waitFor({ state: 'visible', timeout: 180_000 });
  assert.match(await toast.innerText(), /reward 1/);
  await page.locator('.tabs-container .tab', { hasText: 'Agent changes' }).first().waitFor({ timeout: 20_000 });
  assert.equal(readFileSync(join(workspace, 'status.txt'), 'utf8'), 'status: broken\n', 'nothing is written before the user applies');
  assert.ok(model.calls >= 2, 'the model played the agent');

  await toast.locator('.monaco-button', { hasText: 'Apply to workspace' }).click();
  const deadline = Date.now() + 20_000;
  while (readFileSync(join(workspace, 'status.txt'), 'utf8') !== 'status: fixed\n' && Date.now() < deadline) await page.waitForTimeout(200);
  assert.equal(readFileSync(join(workspace, 'status.txt'), 'utf8'), 'status: fixed\n');
  const [run] = readdirSync(join(workspace, 'runs'));
  assert.match(readFileSync(join(workspace, 'runs', run, 'changes.patch'), 'utf8'), /^\+status: fixed$/m);
});
