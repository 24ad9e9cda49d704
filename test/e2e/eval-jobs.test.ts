import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ensureVsix, requireTools } from './code-server';
import { openWorkbench, removeRunContainers, runIdsIn, screenshotIfFailed, type WorkbenchSession } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { EvalComparePage } from './pages/eval-compare';
import { writeEvalJob } from '../helpers/eval-jobs-fixture';
import { compareJobs, loadJob } from '../../src/core/eval/compare';
import { rateColour } from '../../webview/eval-compare/matrix';

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
  cpSync('examples/hello-world', join(workspace, 'examples/hello-world'), { recursive: true });
  session = await openWorkbench(workspace);
  ({ page, wb } = session);
});

afterEach((t) => screenshotIfFailed(t, session?.wb, 'eval-jobs'));

after(async () => {
  await session?.browser.close();
  await session?.server.stop();
  // Safety net: a run the test abandoned (the cancel below normally removes its container itself).
  for (const d of startedJobs()) removeRunContainers(runIdsIn(join(d, 'trials')));
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
  // The replay's step editor covers the comparison (its webview is hidden then), so the check is the debugger's.
  const dbg = new DebugView(page);
  await dbg.waitForTopFrame(0, 30_000);
  await page.getByText('Replaying hello-world').first().waitFor({ timeout: 10_000 });
  await dbg.stopIfRunning();
});

function startedJobs(): string[] {
  const root = join(workspace, 'jobs');
  return existsSync(root) ? readdirSync(root).map((n) => join(root, n)).filter((d) => d !== older && d !== newer) : [];
}

test('Run Evaluation runs the CLI from its quick picks, the view follows the job live, and Cancel leaves it resumable', async () => {
  await wb.showView('TBRL Studio');
  await wb.runCommand('TBRL: Run Evaluation');
  // Each answer waits for its own question: a click on a box that is still opening is lost.
  const answer = async (title: string, row: string): Promise<void> => {
    await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).first().waitFor({ timeout: 20_000 });
    // Typed, then Enter: a click can land on the row above while the list is still laid out.
    await page.locator('.quick-input-widget input').fill(row);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: row }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press('Enter');
  };
  await answer('Run Evaluation: tasks', 'examples');
  await answer('attempts per task', '10');
  await answer('trials at a time', '1');
  // No model is configured: the oracle policy is the only one and is not asked.
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Eval Jobs' }) });
  const row = pane.locator('.monaco-list-row', { hasText: '(oracle)' }).filter({ hasText: /\/10/ });
  // Live: the row shows the job with a trial running, then its finished trials as they end.
  await row.filter({ hasText: / · 1 running$/ }).first().waitFor({ timeout: 30_000 });
  await row.filter({ hasText: /[1-9]\/10 · passed [1-9]/ }).first().waitFor({ timeout: 60_000 });
  const [jobDir] = startedJobs();
  assert.ok(jobDir, 'a new job directory under jobs/');
  await wb.runCommand('TBRL: Cancel Eval Job');
  await wb.pick(jobDir.split('/').pop()!);
  await page.locator('.notification-toast', { hasText: 'Evaluation interrupted' }).first().waitFor({ timeout: 30_000 });
  // On disk: job.json, at least the finished trial, an incomplete results.json: what --resume needs.
  const results = JSON.parse(readFileSync(join(jobDir, 'results.json'), 'utf8')) as { complete: boolean; overall: { trials: number; passed: number } };
  assert.equal(results.complete, false);
  assert.ok(results.overall.trials >= 1 && results.overall.trials < 10, JSON.stringify(results.overall));
  assert.equal(results.overall.passed, results.overall.trials);
  assert.ok(existsSync(join(jobDir, 'job.json')));
  await pane.locator('.monaco-list-row', { hasText: jobDir.split('/').pop()! }).first().hover();
  await pane.locator('.monaco-list-row .action-label[aria-label="Resume Eval Job"]').first().waitFor({ timeout: 10_000 });
});
