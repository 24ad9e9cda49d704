import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, replayWorkspace, removeRunContainers, runIdsIn, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { TraceGraph } from './pages/trace-graph';

// The packaged extension in a real VS Code (code-server) driven through real Chromium: the user's
// path from the activity bar to a replayed run, a breakpoint, stepping both ways, the Variables
// view, the trace graph driving the debugger, and a live oracle run on real Docker.
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let dbg: DebugView;
let workspace: string;

before(async () => {
  requireTools();
  ensureVsix();
  workspace = replayWorkspace('tbrl-e2e-ws-');
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  dbg = new DebugView(page);
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined);
});

after(async () => {
  // Ending the session lets a live run close its sandbox before the extension host goes away.
  await dbg?.stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (workspace) {
    // Safety net: a run the test abandoned (a failure mid-run) must not leave containers behind.
    removeRunContainers(runIdsIn(join(workspace, 'runs')));
    rmSync(workspace, { recursive: true, force: true });
  }
});

test('the activity bar container lists the example task and the recorded run with reward, pass and steps', async () => {
  await wb.showView('TBRL Studio');
  const tasks = await wb.treeRows('Tasks');
  // Not validated in this workspace yet; the recorded run (made on another machine) counts by task id.
  assert.ok(tasks.some((t) => /examples\/hello-world\s*terminal-bench · reward 1\.000$/.test(t)), `Tasks view: ${JSON.stringify(tasks)}`);
  const runs = await wb.treeRows('Runs');
  assert.ok(runs.some((r) => /hello-world.*pass · reward 1\.000 · 3 steps/s.test(r)), `Runs view: ${JSON.stringify(runs)}`);
  await wb.screenshot('01-views');
});

test('a replay stops at a breakpoint, steps forward and back, and shows the step in the Variables view', async () => {
  await dbg.start();
  const top = await dbg.waitForTopFrame(1, 30_000);
  assert.match(top, /^#1 bash "cat > \/app\/wordfreq\.py/);
  assert.deepEqual((await dbg.frameLabels()).map((l) => l.slice(0, 2)), ['#1', '#0']);
  await dbg.waitForVariable('index', '1');
  const labels = await dbg.variableLabels();
  assert.ok(labels.includes('exitCode, value 0'), labels.join(' | '));
  assert.ok(labels.includes('actions, value bash'), labels.join(' | '));
  for (const scope of ['Candidates', 'Todos & scratchpad', 'Files changed', 'Reward & credit']) assert.ok(labels.includes(`Scope ${scope}`), `scope ${scope} in ${labels.join(' | ')}`);
  // The turn is the editor's current document.
  await page.locator('.tab', { hasText: 'step-1.tbrl.yaml' }).waitFor();
  await wb.screenshot('02-breakpoint');

  await page.keyboard.press('F10');
  await dbg.waitForTopFrame(2);
  await dbg.waitForVariable('index', '2');
  await dbg.toolbar('debug-step-back');
  await dbg.waitForTopFrame(1);
  await dbg.waitForVariable('index', '1');


  // The Variables list is virtualised: fold the Step scope so the credit rows are on screen.
  await dbg.expandScope('Step', false);
  await dbg.expandScope('Reward & credit');
  await dbg.waitForVariable('reward', 'total 1.000');
  await dbg.waitForVariable('depgpo.factor', '1.5');
  await wb.screenshot('03-variables');

  // A function breakpoint added in the Breakpoints view, hit by reverse continue.
  await dbg.addFunctionBreakpoint('/mkdir/');
  await dbg.toolbar('debug-reverse-continue');
  await dbg.waitForTopFrame(0);
  await dbg.waitForStopDescription(/breakpoint \/mkdir\/ at step 0/, 10_000);
  await dbg.toolbar('debug-step-over');
  await dbg.waitForTopFrame(1);
  await wb.screenshot('03b-function-breakpoint');
  // Breakpoints belong to the workspace: clear them so the live run below is not stopped by this one.
  await dbg.removeAllBreakpoints();
});

test('the trace graph shows the commands, E and the paths into E, and a click selects the step in the debugger', async () => {
  await wb.runCommand('TBRL: Show Trace Graph');
  const graph = new TraceGraph(wb.webview());
  await graph.waitReady();
  assert.equal(await graph.commandNodes().count(), 3);
  const sinks = await graph.sinkIds();
  assert.ok(sinks.includes('E:file:/app/out/counts.json') && sinks.includes('E:file:/app/out/summary.txt'), `sinks: ${sinks.join(', ')}`);
  assert.deepEqual((await graph.onPathIds()).sort(), ['c1', 'c2']);
  assert.match(await graph.stats(), /3 commands · 1 edges · \d+ in E(?: \(\+\d+ runtime, not drawn\))? · 2 on paths into E/);
  assert.deepEqual(await graph.currentIds(), ['c1'], 'the graph follows the debugger (stopped at step 1)');
  await wb.screenshot('04-trace-graph');

  // Edge toggles, and the toggle survives the panel being hidden (webview state via getState/setState).
  assert.equal(await graph.visibleEdges('file'), 1);
  await graph.toggle('file-edges');
  assert.equal(await graph.visibleEdges('file'), 0);
  // Hide the panel behind another editor in its group (VS Code discards a hidden webview), then bring it back.
  // The graph's group is locked (new editors open elsewhere), so unlock it first, as a user would.
  await page.locator('.tab', { hasText: 'Trace graph' }).first().click();
  assert.equal(await page.locator('.editor-group-container.active.locked').count(), 1, 'the graph opened in a locked group of its own');
  await wb.runCommand('View: Unlock Editor Group');
  await wb.runCommand('File: New Untitled Text File');
  await page.locator('iframe.webview.ready').first().waitFor({ state: 'hidden', timeout: 10_000 });
  await page.locator('.tab', { hasText: 'Trace graph' }).first().click();
  await graph.waitReady();
  assert.equal(await graph.restoredFromState(), true, 'the webview was rebuilt from its saved state');
  assert.equal(await graph.checked('file-edges'), false, 'the unchecked toggle came back after the panel was hidden');
  assert.equal(await graph.visibleEdges('file'), 0);
  await graph.toggle('file-edges');

  await graph.clickCommand('c2');
  await dbg.waitForTopFrame(2);
  assert.deepEqual(await graph.currentIds(), ['c2']);
  await wb.screenshot('05-graph-selects-step');
  await dbg.stop();
});

test('a live oracle run on real Docker stops before its first action, then runs to the end and stays open as a replay', { timeout: 240_000 }, async () => {
  await dbg.stopIfRunning();
  await wb.runCommand('TBRL: Run Agent on Task');
  await wb.pick('examples/hello-world');
  const pending = await dbg.waitForTopFrame(0, 90_000);
  assert.match(pending, /^#0 ▶ bash \(not run yet\)/);
  await wb.screenshot('06-live-before-first-action');
  await page.keyboard.press('F5');
  await dbg.waitForStopDescription(/run ended: finished, reward 1\.000/, 180_000);
  const frames = await dbg.frameLabels();
  assert.match(frames[0], new RegExp(`^#${frames.length - 1} `), 'stopped on the last step, every step on the stack');
  await dbg.expandScope('Step', false);
  await dbg.expandScope('Reward & credit');
  await dbg.waitForVariable('reward', 'total 1.000', 30_000);
  await wb.screenshot('07-live-finished');
  await dbg.stop();
  const runs = readdirSync(join(workspace, 'runs')).filter((d) => d.startsWith('hello-world-') && d !== 'hello-world-oracle');
  assert.equal(runs.length, 1, `one live run written under runs/: ${runs.join(', ')}`);
  const trajectory = join(workspace, 'runs', runs[0], 'trajectory.jsonl');
  assert.ok(existsSync(trajectory));
  const lines = readFileSync(trajectory, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.filter((l) => l.type === 'step').length, frames.length, 'the Call Stack showed every recorded step');
  assert.equal(lines[lines.length - 1].reward.total, 1);
});

test('a live run forks from a step with Restart Frame, and Step Back undoes a step in the container, all in the editor', { timeout: 300_000 }, async () => {
  await dbg.stopIfRunning();
  const runsDir = join(workspace, 'runs');
  const before = new Set(readdirSync(runsDir));
  const newRuns = (): string[] => readdirSync(runsDir).filter((d) => !before.has(d)).sort();
  const headerOf = (run: string): { forkedFrom?: { step: number; runId: string }; runId: string } => JSON.parse(readFileSync(join(runsDir, run, 'trajectory.jsonl'), 'utf8').split('\n')[0]);
  await wb.runCommand('TBRL: Run Agent on Task');
  await wb.pick('examples/hello-world');
  await dbg.waitForTopFrame(0, 90_000);
  // Step runs one action and stops before the next: steps 0 and 1 run in the first container.
  await page.keyboard.press('F10');
  await dbg.waitForTopFrame(1, 60_000);
  await page.keyboard.press('F10');
  const beforeStep2 = await dbg.waitForTopFrame(2, 60_000);
  assert.match(beforeStep2, /^#2 ▶ .*\(not run yet\)/);
  assert.equal(newRuns().length, 1);
  const source = headerOf(newRuns()[0]);

  await dbg.restartFrame(0);
  await dbg.waitForTopFrame(1, 90_000);
  assert.match((await dbg.frameLabels())[0], /^#1 ▶ .*\(not run yet\)/, 'the fork stops before the step after the restarted one');
  assert.equal((await dbg.frameLabels()).length, 2, 'the fork keeps step 0 and waits before step 1');
  const afterFork = newRuns();
  assert.equal(afterFork.length, 2, `a second run was written for the fork: ${afterFork.join(', ')}`);
  const fork = afterFork.map(headerOf).find((h) => h.runId !== source.runId)!;
  assert.deepEqual([fork.forkedFrom?.runId, fork.forkedFrom?.step], [source.runId, 0]);
  await wb.screenshot('08-restart-frame-fork');

  // Step Back from the turn before step 1 goes to before step 0: nothing of the earlier runs is kept.
  await dbg.toolbar('debug-step-back');
  await dbg.waitForTopFrame(0, 90_000);
  await page.locator('.debug-call-stack .monaco-list-row .stack-frame .label').nth(1).waitFor({ state: 'detached', timeout: 30_000 });
  assert.equal(newRuns().length, 3, 'step back before step 0 starts the task again');
  await page.keyboard.press('F5');
  await dbg.waitForStopDescription(/run ended: finished, reward 1\.000/, 180_000);
  await wb.screenshot('09-step-back-restored-run-finished');
  await dbg.stop();
});

test('Validate Task on real Docker: the Tasks view then shows the task as valid, from the recorded validation', { timeout: 240_000 }, async () => {
  await wb.showView('TBRL Studio');
  await wb.runCommand('TBRL: Validate Task');
  await wb.pick('examples/hello-world');
  await page.locator('.notifications-toasts .notification-toast', { hasText: /hello-world: valid \(oracle 1, empty agent 0\)/ }).waitFor({ timeout: 200_000 });
  const row = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Tasks' }) }).locator('.monaco-list-row', { hasText: 'examples/hello-world' });
  await row.filter({ hasText: /terminal-bench · valid · reward 1\.000/ }).waitFor({ timeout: 20_000 });
  const record = JSON.parse(readFileSync(join(workspace, '.tbrl/validations.json'), 'utf8'));
  assert.deepEqual([record.tasks['examples/hello-world'].valid, record.tasks['examples/hello-world'].empty.score], [true, 0]);
  await wb.screenshot('10-tasks-view-validated');
});
