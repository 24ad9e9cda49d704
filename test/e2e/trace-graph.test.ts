import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, replayWorkspace, removeRunContainers, runIdsIn, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { TraceGraph } from './pages/trace-graph';
import { probedOracleTrajectory } from '../helpers/graph-fixture';

// The trace graph in a real VS Code (code-server) in Chromium: folding runs of commands into summary
// nodes and unfolding them (on a recorded run with probing commands added), and the graph of a live
// oracle run on real Docker growing as its steps are written, following a fork, ending with E.
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let dbg: DebugView;
let workspace: string;

before(async () => {
  requireTools();
  ensureVsix();
  workspace = replayWorkspace('tbrl-e2e-graph-', probedOracleTrajectory(readFileSync('test/e2e/fixtures/hello-world-oracle/trajectory.jsonl', 'utf8')));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  dbg = new DebugView(page);
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined, 'graph-failed');
});

after(async () => {
  await dbg?.stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (workspace) {
    removeRunContainers(runIdsIn(join(workspace, 'runs')));
    rmSync(workspace, { recursive: true, force: true });
  }
});

test('collapse all folds the independent run into one summary node, a click on it unfolds it, its ⊟ folds it back; off-path folding redraws edges to the summary', async () => {
  await wb.runCommand('TBRL: Show Trace Graph');
  await wb.pick('hello-world');
  const graph = new TraceGraph(wb.webview());
  await graph.waitReady();
  assert.equal(await graph.commandNodes().count(), 9);
  assert.equal(await graph.summaryNodes().count(), 0, 'a small graph starts unfolded');
  assert.equal(await graph.collapseAllButton().innerText(), 'Collapse all');

  await graph.collapseAllButton().click();
  await graph.waitForCommandCount(5);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);
  assert.deepEqual(await graph.commandIds(), ['c4', 'c5', 'c6', 'c7', 'c8']);
  assert.equal(await graph.collapseAllButton().innerText(), 'Expand all');
  assert.match(await graph.stats(), /9 commands · 4 edges · \d+ in E(?: \(\+\d+ runtime, not drawn\))? · 2 on paths into E \(22%\) · 1 folded \(4 commands\)/);
  const hover = await graph.hoverText('fold:c0');
  assert.match(hover, /^steps 0–3: 4 independent commands: no dependency edge, not on a path into E/);
  assert.match(hover, /first \(c0\): mkdir -p \/app\/out/);
  assert.match(hover, /last \(c3\): cat \/app\/data\/notes\.md/);
  await wb.screenshot('graph-01-folded');

  await graph.clickSummary('fold:c0');
  await graph.waitForCommandCount(9);
  assert.equal(await graph.summaryNodes().count(), 0);
  // An unfolded command still works as a command: hover and click-to-select, and says how to fold it back.
  assert.match(await graph.hoverText('c2'), /^step 2 · factor[\s\S]*pwd[\s\S]*folds with steps 0–3 \(4 commands\)/);
  await wb.screenshot('graph-02-unfolded');
  await graph.foldBack('c2');
  await graph.waitForCommandCount(5);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);
  // Alt-click on one of its commands folds it back too; a plain click would select the step.
  await graph.clickSummary('fold:c0');
  await graph.waitForCommandCount(9);
  await graph.altClickCommand('c1');
  await graph.waitForCommandCount(5);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);

  // Folding what does not lead into E: the readers of the script fold too, and c4's three edges into them become one edge to the summary.
  await graph.foldBy('off-path');
  await graph.waitForCommandCount(2);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0', 'fold:c5']);
  const into = await graph.edgesInto('fold:c5');
  assert.deepEqual(into.map((e) => e.source), ['c4']);
  assert.match(into[0].title, /^file: \/app\/wordfreq\.py · 3 edges$/);
  assert.match(await graph.hoverText('fold:c5'), /steps 5–7: 3 commands not on any dependency path into E\nedges: 0 inside, 3 in, 0 out/);
  assert.deepEqual((await graph.onPathIds()).sort(), ['c4', 'c8'], 'the path into E stays drawn');
  await wb.screenshot('graph-03-off-path-folded');

  // The folds survive the panel being hidden (webview state).
  await page.locator('.tab', { hasText: 'Trace graph' }).first().click();
  await wb.runCommand('File: New Untitled Text File');
  await page.locator('iframe.webview.ready').first().waitFor({ state: 'hidden', timeout: 10_000 });
  await page.locator('.tab', { hasText: 'Trace graph' }).first().click();
  await graph.waitReady();
  assert.equal(await graph.restoredFromState(), true);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0', 'fold:c5']);
  await graph.clickSummary('fold:c5');
  await graph.waitForCommandCount(5);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);
  await graph.collapseAllButton().click();
  await graph.waitForCommandCount(9);
  assert.equal(await graph.summaryNodes().count(), 0);
});

test('the graph of a live oracle run grows as steps are written, keeps the user\'s zoom and folds, follows a restarted frame, and ends with E', { timeout: 420_000 }, async () => {
  // The oracle of examples/hello-world: c0 ls, c1 head, c2 mkdir (an independent run), c3 writes the script, c4 runs it (both into E), c5 cat.
  await wb.runCommand('TBRL: Run Agent on Task');
  await wb.pick('examples/hello-world');
  await dbg.waitForTopFrame(0, 120_000);
  // Nothing written yet: the graph opens empty and says why.
  await wb.runCommand('TBRL: Show Trace Graph');
  const graph = new TraceGraph(wb.webview());
  const liveTab = page.locator('.tab', { hasText: /Trace graph: runs\/hello-world-\d/ }).first();
  await liveTab.waitFor({ timeout: 20_000 });
  await graph.waitForCommandCount(0);
  await graph.frame.locator('#status', { hasText: /Live run: 0 step\(s\) so far/ }).waitFor({ timeout: 20_000 });
  assert.match(await graph.status(), /No E yet/);
  assert.equal(await graph.live(), true);
  assert.equal(await graph.sinkNodes().count(), 0);
  const firstRun = (await liveTab.innerText()).replace(/^Trace graph: /, '').trim();
  await wb.screenshot('graph-04-live-entry');

  await dbg.toolbar('debug-step-over');
  await graph.waitForCommandCount(1, 60_000);
  await dbg.waitForTopFrame(1, 60_000);
  assert.deepEqual(await graph.commandIds(), ['c0']);
  await graph.frame.locator('#status', { hasText: /Live run: 1 step\(s\) so far, 1 command\(s\)/ }).waitFor({ timeout: 20_000 });

  // The user's zoom stays across the redraws of a growing graph.
  await graph.zoomIn(page);
  await new Promise((r) => setTimeout(r, 300));
  const zoomed = await graph.transform();
  await dbg.toolbar('debug-step-over');
  await graph.waitForCommandCount(2, 60_000);
  await dbg.waitForTopFrame(2, 60_000);
  assert.equal(await graph.transform(), zoomed, 'zoom and pan kept across the redraw');
  assert.match(await graph.hoverText('c1'), /head -n 3 \/app\/data\/input\.txt/);

  // Three independent commands, but the newest command of a live run never folds (its consumers have not run yet).
  await dbg.toolbar('debug-step-over');
  await graph.waitForCommandCount(3, 60_000);
  await dbg.waitForTopFrame(3, 60_000);
  assert.equal(await graph.collapseAllButton().isDisabled(), true, 'c0 c1 are too few to fold, c2 is the newest');
  await dbg.toolbar('debug-step-over');
  await graph.waitForCommandCount(4, 60_000);
  await dbg.waitForTopFrame(4, 60_000);
  await graph.collapseAllButton().click();
  await graph.waitForCommandCount(1);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);
  assert.deepEqual(await graph.commandIds(), ['c3']);
  // The next step redraws the graph: the fold stays, the new command is drawn.
  await dbg.toolbar('debug-step-over');
  await graph.waitForCommandCount(2, 60_000);
  await dbg.waitForTopFrame(5, 60_000);
  assert.deepEqual(await graph.commandIds(), ['c3', 'c4']);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0'], 'the fold survived the redraw');
  assert.equal(await graph.sinkNodes().count(), 0, 'no E while the run is going');
  assert.match(await graph.hoverText('fold:c0'), /^steps 0–2: 3 independent commands/);
  await wb.screenshot('graph-05-live-folded');

  // Restart frame on step 1: the session forks and the graph follows it onto the fork's trajectory (steps 0 and 1 copied).
  await dbg.restartFrame(1);
  await page.locator('.tab', { hasText: /Trace graph: runs\/hello-world-\d/ }).filter({ hasNotText: firstRun }).first().waitFor({ timeout: 120_000 });
  await dbg.waitForTopFrame(2, 120_000);
  // The old run's graph also shows two commands (c3 c4 beside its fold): wait for the fork's own.
  for (const deadline = Date.now() + 60_000; Date.now() < deadline && (await graph.commandIds()).join() !== 'c0,c1';) await page.waitForTimeout(250);
  assert.deepEqual(await graph.commandIds(), ['c0', 'c1'], 'two commands do not fold');
  assert.equal(await graph.live(), true);
  await wb.screenshot('graph-06-live-forked');

  // Run to the end: the final graph arrives with E and the paths into it; the fork's independent run folds as before.
  await dbg.toolbar('debug-continue');
  await dbg.waitForStopDescription(/run ended: finished, reward 1\.000/, 180_000);
  await graph.frame.locator('g.node.sink').first().waitFor({ timeout: 30_000, state: 'attached' });
  await graph.waitForCommandCount(3, 30_000);
  assert.deepEqual(await graph.commandIds(), ['c3', 'c4', 'c5']);
  assert.deepEqual(await graph.summaryIds(), ['fold:c0']);
  assert.deepEqual((await graph.onPathIds()).sort(), ['c3', 'c4']);
  assert.equal(await graph.live(), false);
  assert.doesNotMatch(await graph.status(), /Live run|No E yet/);
  await wb.screenshot('graph-07-live-ended');
  await graph.collapseAllButton().click();
  await graph.waitForCommandCount(6);
  await dbg.stop();
});
