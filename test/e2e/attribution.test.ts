import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, REPLAY_RUN, replayWorkspace } from './session';
import { Workbench } from './pages/workbench';
import { Editor } from './pages/editor';
import { DebugView } from './pages/debug-view';
import { SNAPSHOT_INDEX } from '../../src/core/attribution/snapshot';

// A finished run's changed file opened from the command palette in a real VS Code (code-server):
// it opens read-only from the run's snapshot and the line the oracle wrote carries "step N".
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let workspace: string;

/** The recorded oracle run predates snapshots: give it the one runTask now writes, from the oracle's own heredoc. */
function addSnapshot(runDir: string): void {
  const solution = readFileSync('examples/hello-world/solution.sh', 'utf8');
  const script = /cat > \/app\/wordfreq\.py <<'PY'\n([\s\S]*?)\nPY\n/.exec(solution)![1] + '\n';
  mkdirSync(join(runDir, 'files/app'), { recursive: true });
  writeFileSync(join(runDir, 'files/app/wordfreq.py'), script);
  writeFileSync(join(runDir, SNAPSHOT_INDEX), JSON.stringify({ version: 1, files: [{ path: '/app/wordfreq.py', bytes: Buffer.byteLength(script), lastStep: 1 }], skipped: [] }));
}

before(async () => {
  requireTools();
  ensureVsix();
  workspace = replayWorkspace('tbrl-e2e-attr-');
  addSnapshot(join(workspace, REPLAY_RUN));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
});

afterEach(async (t) => {
  if (page && (t as unknown as { passed?: boolean }).passed === false) await wb.screenshot(`failed-${t.name.slice(0, 40).replace(/[^a-z0-9]+/gi, '-')}`);
});

after(async () => {
  await new DebugView(page).stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('"Open Changed File" opens the run\'s wordfreq.py read-only with "step 1" after the line the oracle wrote', async () => {
  const editor = new Editor(page);
  await wb.runCommand('TBRL: Open Changed File');
  await wb.pick('hello-world');
  await wb.pick('/app/wordfreq.py');
  await editor.waitForTab('wordfreq.py');
  const after = await editor.waitForAfterText('import json', /^step 1$/);
  assert.ok(after.includes('step 1'), JSON.stringify(after));
  // Only the first line of the step's block is labelled.
  assert.deepEqual((await editor.afterText('import re')).filter((t) => /^step/.test(t)), []);
  await wb.screenshot('attribution-changed-file');
});

test('from the debugger: "Files changed" opens the file, and its hover link selects the writing step', async () => {
  const dbg = new DebugView(page);
  const editor = new Editor(page);
  // The first test left wordfreq.py open; the file must come from the Variables view this time.
  await wb.runCommand('View: Close All Editors');
  await dbg.start();
  await dbg.waitForTopFrame(1, 30_000);
  await dbg.expandScope('Files changed');
  const row = page.locator('.debug-variables .monaco-list-row[aria-label^="/app/wordfreq.py"]').first();
  await row.click({ button: 'right' });
  // Monaco's context menu acts on its focused item; Enter is the reliable way to choose it.
  await page.locator('.monaco-menu .action-label', { hasText: 'Open Changed File' }).first().hover();
  await page.keyboard.press('Enter');
  await editor.waitForTab('wordfreq.py');
  await editor.waitForAfterText('import json', /^step 1$/);
  // Move the debugger away from step 1, then come back through the hover's link.
  await dbg.toolbar('debug-step-over');
  await dbg.waitForTopFrame(2);
  // The debugger showed step 2's turn in the editor group; go back to the file's tab.
  await editor.activateTab('wordfreq.py');
  await editor.hoverLine('import json');
  await page.locator('.monaco-hover a', { hasText: 'Select step 1 in the debugger' }).first().click();
  const top = await dbg.waitForTopFrame(1);
  assert.match(top, /^#1 bash "cat > \/app\/wordfreq\.py/);
  await dbg.stop();
});
