import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, replayWorkspace } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { StepInspector } from './pages/step-inspector';
import type { StepRecord } from '../../src/core/trajectory/schema';

// The step inspector in a real VS Code (code-server) over a replay: the recorded oracle run, with
// step 1 given a second candidate, a pairwise verifier decision and Φ values, so every section draws.
let server: CodeServer;
let browser: Browser;
let page: Page;
let wb: Workbench;
let dbg: DebugView;
let workspace: string;

function withVerifier(jsonl: string): string {
  return jsonl.trimEnd().split('\n').map((line) => {
    const r = JSON.parse(line) as StepRecord | { type: string };
    if (r.type !== 'step') return line;
    const s = r as StepRecord;
    s.phi = [0.2, 0.6, 0.5][s.index];
    if (s.index === 1) {
      s.candidates.push({ text: '<bash>\ncmd: echo "<b>not bold</b>"\n</bash>', parses: true, completionTokens: 9 });
      s.decision = { mode: 'pairwise', chosen: 0, scores: [0.8, 0.2], margin: 0.6, matrix: [[0, 0.6], [-0.6, 0]], calls: 2, outputTokens: 40, parallelOutputTokens: 20 };
    }
    return JSON.stringify(s);
  }).join('\n') + '\n';
}

before(async () => {
  requireTools();
  ensureVsix();
  workspace = replayWorkspace('tbrl-e2e-inspector-', withVerifier(readFileSync('test/e2e/fixtures/hello-world-oracle/trajectory.jsonl', 'utf8')));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  dbg = new DebugView(page);
});

after(async () => {
  await dbg?.stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('the step inspector follows the replay: candidates with scores, pairwise matrix, reward rows, Φ curve', async () => {
  await dbg.start();
  await dbg.waitForTopFrame(1, 30_000);
  await wb.runCommand('TBRL: Show Step Inspector');
  const inspector = new StepInspector(wb.webview());
  await inspector.waitForStep(1);
  const cands = await inspector.candidates();
  assert.deepEqual(cands.map((c) => [c.index, c.chosen, c.score]), [['0', true, 'score 0.800'], ['1', false, 'score 0.200']]);
  assert.match(cands[0].text, /cat > \/app\/wordfreq\.py/);
  assert.equal(cands[1].text, '<bash>\ncmd: echo "<b>not bold</b>"\n</bash>', 'candidate text is shown as text, not HTML');
  assert.equal(await inspector.frame.locator('.candidate b').count(), 0);
  assert.equal(await inspector.matrixCells(), 2);
  assert.deepEqual(await inspector.rewardRows(), [
    ['tests', 'tests', '1', '1', ''],
    ['tests', '../tests/test_outputs.py::test_script_exists', '1', '0.100', '10%'],
    ['tests', '../tests/test_outputs.py::test_counts_correct', '1', '0.400', '40%'],
    ['tests', '../tests/test_outputs.py::test_counts_sorted', '1', '0.200', '20%'],
    ['tests', '../tests/test_outputs.py::test_summary_line', '1', '0.300', '30%'],
    ['judge', 'judge', '–', '0', ''],
    ['total', 'total', '1', '–', ''],
  ]);
  assert.deepEqual(await inspector.phiPoints(), { all: 3, current: 1, drops: 1 });
  await wb.screenshot('inspector-01-step-1');
  await inspector.frame.locator('#phi svg').scrollIntoViewIfNeeded();
  await wb.screenshot('inspector-01b-phi');

  // Stepping in the debugger moves the inspector along.
  await dbg.toolbar('debug-step-over');
  await dbg.waitForTopFrame(2);
  await inspector.waitForStep(2).catch(async (err: Error) => {
    await wb.screenshot('inspector-failed-step-2');
    throw err;
  });
  assert.equal((await inspector.candidates()).length, 1);
  assert.equal(await inspector.matrixCells(), 0);
  await wb.screenshot('inspector-02-step-2');
});
