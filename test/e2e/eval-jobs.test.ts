import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ensureVsix, requireTools } from './code-server';
import { openWorkbench, screenshotIfFailed, type WorkbenchSession } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { EvalComparePage } from './pages/eval-compare';
import { writeEvalJob } from '../helpers/eval-jobs-fixture';
import { compareJobs, loadJob } from '../../src/core/eval/compare';
import { rateColour } from '../../src/core/eval/view-model';

// The Eval Jobs view and the comparison webview in a real VS Code (code-server) over two job
// directories written by the core's own writers; no trial runs (the trials' trajectories are the
// recorded hello-world oracle run, so a clicked cell opens a real replay in the debugger).
let session: WorkbenchSession | undefined;
let page: Page;
let wb: Workbench;
let workspace: string;
let older: string;
let newer: string;

before(async () => {
  requireTools();
  ensureVsix();
  workspace = mkdtempSync(join(tmpdir(), 'tbrl-e2e-evaljobs-'));
  older = join(workspace, 'jobs', '20261201-100000');
  newer = join(workspace, 'jobs', '20261202-100000');
  writeEvalJob(older, { alpha: ['passed', 'passed'], beta: ['failed', 'failed'], gamma: ['passed', 'failed'], delta: ['environment_error', 'environment_error'] }, { mtime: new Date('2026-12-01T10:00:00Z') });
  writeEvalJob(newer, { alpha: ['failed', 'failed'], beta: ['passed', 'passed'], gamma: ['passed', 'passed'], delta: ['passed', 'failed'] }, { model: 'm2', mtime: new Date('2026-12-02T10:00:00Z') });
  session = await openWorkbench(workspace);
  ({ page, wb } = session);
});

afterEach((t) => screenshotIfFailed(t, session?.wb, 'eval-jobs'));

after(async () => {
  await session?.browser.close();
  await session?.server.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('the Eval Jobs view lists both jobs newest first with pass@1, done/total and outcome counts; a job expands to tasks and trials', async () => {
  await wb.showView('TBRL Studio');
  const header = page.locator('.pane-header', { hasText: 'Eval Jobs' }).first();
  if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();
  const rows = await wb.treeRows('Eval Jobs');
  assert.equal(rows.length, 2, rows.join('\n'));
  assert.match(rows[0], /20261202-100000 \(m2\)/);
  assert.match(rows[0], /pass@1 62\.5% · 8\/8 · passed 5 · failed 3/);
  assert.match(rows[1], /20261201-100000 \(oracle\)/);
  assert.match(rows[1], /pass@1 50\.0% · 8\/8 · passed 3 · failed 3 · environment_error 2/);
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Eval Jobs' }) });
  await pane.locator('.monaco-list-row', { hasText: '20261201-100000' }).first().click();
  await pane.locator('.monaco-list-row', { hasText: 'delta' }).first().waitFor({ timeout: 10_000 });
  const expanded = await wb.treeRows('Eval Jobs');
  assert.ok(expanded.some((r) => /gamma/.test(r) && /50% · 1\/2 passed/.test(r)), expanded.join('\n'));
  assert.ok(expanded.some((r) => /delta/.test(r) && /2 masked/.test(r)), expanded.join('\n'));
});

test('Compare Eval Jobs shows the tasks × jobs matrix coloured by pass rate, the bootstrap difference and the flipped tasks; sort and filter work', async () => {
  await wb.runCommand('TBRL: Compare Eval Jobs');
  // The two newest jobs are pre-picked: Enter compares them, the older one as the baseline.
  await page.locator('.quick-input-list .monaco-list-row', { hasText: '20261201-100000' }).first().waitFor({ timeout: 20_000 });
  await page.keyboard.press('Enter');
  const cmp = new EvalComparePage(wb.webview());
  await cmp.waitForRows(4);
  const headers = await cmp.headers();
  assert.deepEqual(headers.map((h) => h.replace(/ [▲▼]$/, '')), ['task', '[1] 20261201-100000 (oracle)', '[2] 20261202-100000 (m2)', 'Δ [2]−[1]']);
  const rows = await cmp.rows();
  assert.deepEqual(rows.map((r) => r.task), ['alpha', 'beta', 'delta', 'gamma']);
  const alpha = rows[0];
  assert.deepEqual(alpha.cells.map((c) => c.text), ['100%', '0%']);
  assert.equal(alpha.diff, '−100.0');
  assert.equal(alpha.flipped, true);
  assert.equal(rows[1].flipped, true);
  assert.equal(rows[3].flipped, false);
  assert.deepEqual(rows[2].cells.map((c) => c.text), ['–', '50%']);
  // The fill is the view model's colour for that rate (red for 0, green for 1, grey for unscored).
  const rgb = await page.evaluate((c) => { const d = document.createElement('div'); d.style.color = c; document.body.append(d); const v = getComputedStyle(d).color; d.remove(); return v; }, rateColour(1));
  assert.equal(alpha.cells[0].fill, rgb);
  assert.notEqual(alpha.cells[1].fill, rgb);
  assert.equal(alpha.cells[0].trials, 2);
  // The difference line is compare.ts's paired bootstrap (default seed) over the 3 tasks both jobs scored.
  const c = compareJobs([loadJob(older), loadJob(newer)]);
  const iv = c.differences[0].interval;
  const diffs = await cmp.differences();
  assert.equal(diffs.length, 1);
  assert.ok(diffs[0].includes(`over 3 tasks`), diffs[0]);
  assert.ok(diffs[0].includes(`${(iv.mean * 100).toFixed(1)} pts`.replace('-', '−')), `${diffs[0]} vs mean ${iv.mean}`);
  const overall = await cmp.overall();
  assert.equal(overall[0], 'overall');
  assert.match(overall[1], /^50\.0% \(6 scored, 2 masked\)$/);
  await cmp.sortBy('Δ');
  assert.deepEqual((await cmp.rows()).map((r) => r.task), ['beta', 'gamma', 'alpha', 'delta']);
  await cmp.filter('is:flipped');
  await cmp.waitForRows(2);
  assert.deepEqual((await cmp.rows()).map((r) => r.task), ['beta', 'alpha']);
  await cmp.filter('');
  await cmp.waitForRows(4);
  await wb.screenshot('eval-compare');
});

test('clicking a cell opens that task\'s first trial of that job in the replay debugger', async () => {
  const cmp = new EvalComparePage(wb.webview());
  await cmp.clickCell('gamma', 1);
  await cmp.waitForStatus('opened gamma__1 in the debugger');
  await new DebugView(page).waitForTopFrame(0, 30_000);
  await page.locator('.debug-toolbar, .debug-call-stack').first().waitFor({ timeout: 10_000 });
  assert.ok(await page.locator('.debug-call-stack .monaco-list-row').count() > 0);
});
