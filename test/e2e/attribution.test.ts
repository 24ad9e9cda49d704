import { runTaskOk } from '../helpers/run';
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, REPLAY_RUN, replayWorkspace, removeRunContainers, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { DiffEditor } from './pages/diff-editor';
import { DebugView } from './pages/debug-view';
import { SNAPSHOT_INDEX } from '../../src/core/attribution/snapshot';
import { ScriptedPolicy } from '../../src/core/agent/scripted';

// A finished run's changed files opened in a real VS Code (code-server), from the command palette
// and from the debugger's Variables view: each opens as a diff, the image's content on the left
// (empty for a created file), the run's on the right, where the line a step wrote carries "step N".
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let workspace: string;
/** A real run (Docker) whose agent edited a file the image has, so its diff has an original side. */
const EDIT_RUN = 'runs/notes-edit';
let editRunId: string | undefined;
const NOTES_IN_IMAGE = readFileSync('examples/hello-world/data/notes.md', 'utf8');

/** The recorded oracle run predates snapshots: give it the one runTask now writes, from the oracle's own heredoc. */
function addSnapshot(runDir: string): void {
  const solution = readFileSync('examples/hello-world/solution.sh', 'utf8');
  const script = /cat > \/app\/wordfreq\.py <<'PY'\n([\s\S]*?)\nPY\n/.exec(solution)![1] + '\n';
  mkdirSync(join(runDir, 'files/app'), { recursive: true });
  writeFileSync(join(runDir, 'files/app/wordfreq.py'), script);
  // The oracle created wordfreq.py (the image has no such file), so its original is absent.
  writeFileSync(join(runDir, SNAPSHOT_INDEX), JSON.stringify({ version: 1, files: [{ path: '/app/wordfreq.py', bytes: Buffer.byteLength(script), lastStep: 1, original: { status: 'absent' } }], skipped: [] }));
}

before(async () => {
  requireTools();
  ensureVsix();
  workspace = replayWorkspace('tbrl-e2e-attr-');
  addSnapshot(join(workspace, REPLAY_RUN));
  const edit = await runTaskOk({
    taskDir: join(workspace, 'examples/hello-world'), outDir: join(workspace, EDIT_RUN), cwd: workspace, skipReward: true,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST },
    policyOverride: new ScriptedPolicy([`<bash>\ncmd: "sed -i '1s/.*/# Provenance (edited by the agent)/' /app/data/notes.md"\n</bash>`, '<finish>\nmessage: done\n</finish>']),
  });
  editRunId = edit.runId;
  // Side by side even when the debugger's side bar leaves the editor narrow, and one view line per
  // file line, so each side's lines can be compared with the files.
  writeFileSync(join(workspace, '.vscode/settings.json'), JSON.stringify({ 'diffEditor.useInlineViewWhenSpaceIsLimited': false, 'diffEditor.wordWrap': 'off' }));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined);
});

after(async () => {
  await new DebugView(page).stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  if (editRunId) removeRunContainers([editRunId]);
});

/** Right-clicks a "Files changed" row of the Variables view and chooses "Open Changed File". */
async function openFromVariables(path: string): Promise<void> {
  const row = page.locator(`.debug-variables .monaco-list-row[aria-label^=${JSON.stringify(path)}]`).first();
  await row.click({ button: 'right' });
  // Monaco's context menu acts on its focused item; Enter is the reliable way to choose it.
  await page.locator('.monaco-menu .action-label', { hasText: 'Open Changed File' }).first().hover();
  await page.keyboard.press('Enter');
}

test('"Open Changed File" opens the created wordfreq.py as a diff against nothing, "step 1" after the line the oracle wrote', async () => {
  const diff = new DiffEditor(page);
  await wb.runCommand('TBRL: Open Changed File');
  await wb.pick('hello-world-oracle');
  await wb.pick('/app/wordfreq.py');
  await diff.modified.waitForTab('wordfreq.py (created by');
  await diff.waitForSideBySide();
  await diff.waitForLine('modified', (l) => l.startsWith('import json'));
  assert.deepEqual((await diff.lines('original')).filter((l) => l.trim() !== ''), [], 'the image had no wordfreq.py');
  const after = await diff.modified.waitForAfterText('import json', /^step 1$/);
  assert.ok(after.includes('step 1'), JSON.stringify(after));
  // Only the first line of the step's block is labelled.
  assert.deepEqual((await diff.modified.afterText('import re')).filter((t) => /^step/.test(t)), []);
  await wb.screenshot('attribution-changed-file');
});

test('from the debugger: "Files changed" opens the diff, and its hover link selects the writing step', async () => {
  const dbg = new DebugView(page);
  const diff = new DiffEditor(page);
  // The first test left wordfreq.py open; the file must come from the Variables view this time.
  await wb.runCommand('View: Close All Editors');
  await dbg.start();
  await dbg.waitForTopFrame(1, 30_000);
  await dbg.expandScope('Files changed');
  await openFromVariables('/app/wordfreq.py');
  await diff.modified.waitForTab('wordfreq.py (created by');
  await diff.modified.waitForAfterText('import json', /^step 1$/);
  // Move the debugger away from step 1, then come back through the hover's link.
  await dbg.toolbar('debug-step-over');
  await dbg.waitForTopFrame(2);
  // The debugger showed step 2's turn in the editor group; go back to the file's tab.
  await diff.modified.activateTab('wordfreq.py');
  await diff.modified.hoverLine('import json');
  await page.locator('.monaco-hover a', { hasText: 'Select step 1 in the debugger' }).first().click();
  const top = await dbg.waitForTopFrame(1);
  assert.match(top, /^#1 bash "cat > \/app\/wordfreq\.py/);
  await dbg.stop();
});

test('from the debugger: a file the image had opens as a diff, the image\'s text on the left, the run\'s with its attribution on the right', async () => {
  const dbg = new DebugView(page);
  const diff = new DiffEditor(page);
  await dbg.stopIfRunning();
  await wb.runCommand('View: Close All Editors');
  await wb.runCommand('TBRL: Open Trajectory');
  await wb.pick('notes-edit');
  await dbg.waitForTopFrame(0, 30_000);
  await dbg.expandScope('Files changed');
  await openFromVariables('/app/data/notes.md');
  await diff.modified.waitForTab('notes.md (image ↔ run)');
  await diff.waitForSideBySide();
  const left = await diff.waitForLine('original', (l) => l === '# Provenance');
  const right = await diff.waitForLine('modified', (l) => l === '# Provenance (edited by the agent)');
  // Both sides are the whole file: the image's, and the image's with the agent's first line.
  const imageLines = NOTES_IN_IMAGE.replace(/\n$/, '').split('\n');
  assert.deepEqual(left.slice(0, imageLines.length), imageLines);
  assert.deepEqual(right.slice(0, imageLines.length), ['# Provenance (edited by the agent)', ...imageLines.slice(1)]);
  // The run's side keeps its attribution; the image's side has none (the run wrote nothing there).
  await diff.modified.waitForAfterText('# Provenance (edited', /^step 0$/);
  assert.deepEqual((await diff.original.afterText('# Provenance')).filter((t) => /^step/.test(t)), []);
  await wb.screenshot('attribution-diff');
  await dbg.stop();
});
