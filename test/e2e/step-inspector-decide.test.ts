import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, ensureVsix, requireTools } from './code-server';
import { openWorkbench, removeRunContainers, runIdsIn, screenshotIfFailed } from './session';
import { Workbench } from './pages/workbench';
import { DebugView } from './pages/debug-view';
import { StepInspector } from './pages/step-inspector';
import { startOpenAIServer, type OpenAIServer } from '../helpers/openai-server';
import { CANDIDATES, scriptedCandidates, type ScriptedCandidates } from '../helpers/scripted-candidates';

// Deciding a live run's waiting turn from the step inspector in a real VS Code (code-server): the
// model (the local OpenAI-compatible server) offers three candidates, a pointwise verifier picks
// candidate 0, the user clicks "Run this" on candidate 2 in the inspector; that candidate runs
// and the choice lands in <run>/labels.jsonl as preference labels.
let server: CodeServer;
let model: OpenAIServer;
let script: ScriptedCandidates;
let browser: Browser;
let page: Page;
let wb: Workbench;
let dbg: DebugView;
let workspace: string;

before(async () => {
  requireTools();
  ensureVsix();
  script = scriptedCandidates();
  model = await startOpenAIServer({ respond: script });
  workspace = mkdtempSync(join(tmpdir(), 'tbrl-e2e-decide-'));
  cpSync('examples/hello-world', join(workspace, 'examples/hello-world'), { recursive: true });
  mkdirSync(join(workspace, '.vscode'));
  writeFileSync(join(workspace, '.vscode/settings.json'), JSON.stringify({
    'tbrl.model.baseUrl': model.baseUrl, 'tbrl.model.name': 'test-model', 'tbrl.model.n': 3, 'tbrl.verifier.mode': 'pointwise',
    'tbrl.limits.maxSteps': 5, 'tbrl.debug.checkpoint': false,
  }));
  ({ server, browser, page, wb } = await openWorkbench(workspace));
  dbg = new DebugView(page);
});

afterEach(async (t) => {
  await screenshotIfFailed(t, page ? wb : undefined);
});

after(async () => {
  await dbg?.stopIfRunning().catch(() => {});
  await browser?.close();
  await server?.stop();
  await model?.close();
  const runs = workspace ? join(workspace, 'runs') : '';
  if (runs) removeRunContainers(runIdsIn(runs));
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('"Run this" on a candidate the verifier did not pick runs that candidate and writes preference labels', { timeout: 300_000 }, async () => {
  await wb.runCommand('TBRL: Run Agent on Task');
  await wb.pick('examples/hello-world');
  assert.match(await dbg.waitForTopFrame(0, 120_000), /^#0 ▶ bash \(not run yet\)/);
  await wb.runCommand('TBRL: Show Step Inspector');
  const inspector = new StepInspector(wb.webview());
  await inspector.waitForPending(0);
  // A group of its own, locked: the stops below open their turns in the first group, never over the inspector.
  assert.equal(await page.locator('.editor-group-container.locked').count(), 1);
  assert.equal(await page.locator('.editor-group-container.locked .tab').count(), 1);
  assert.deepEqual((await inspector.candidates()).map((c) => [c.index, c.chosen, c.score, c.text]), [
    ['0', true, 'score 0.900', CANDIDATES[0]], ['1', false, 'score 0.500', CANDIDATES[1]], ['2', false, 'score 0.200', CANDIDATES[2]],
  ]);
  assert.deepEqual(await inspector.decideButtons(), [
    { label: 'Edit…', action: 'edit', disabled: false },
    { label: 'Stop run', action: 'stop', disabled: false },
    { label: 'Accept verifier\'s pick', action: 'accept', disabled: false },
    { label: 'Run this', action: 'pick', candidate: '1', disabled: false },
    { label: 'Run this', action: 'pick', candidate: '2', disabled: false },
  ]);
  await wb.screenshot('inspector-decide-01-waiting');

  // The next turn is held back, so the inspector can be seen between the decision and the next stop.
  const release = script.holdLaterTurns();
  await inspector.runCandidate(2);
  assert.match(await inspector.waitForStatus(/^Step 0: running/), /^Step 0: running candidate 2 instead of the verifier's pick 0; 2 preference labels written to labels\.jsonl\.$/);
  assert.ok((await inspector.decideButtons()).every((b) => b.disabled), 'no second decision on a turn already decided');
  await wb.screenshot('inspector-decide-02-sent');
  release();

  // stopAfter, as the quick pick does: the run waits before step 1 and the inspector offers that turn.
  await inspector.waitForPending(1);
  assert.ok((await inspector.decideButtons()).every((b) => !b.disabled));
  assert.match(await inspector.waitForStatus(/./), /^Step 0: running candidate 2/, 'the outcome of the decision stays in the status line');
  // Edit opens the turn in an input box; cancelling it sends nothing and offers the choice again.
  await inspector.clickBar('edit');
  const input = page.locator('.quick-input-widget', { hasText: 'Edited turn' });
  await input.waitFor({ state: 'visible', timeout: 20_000 });
  assert.match(await input.locator('input').inputValue(), /echo second-turn/);
  // On the box itself: a stop that opens its turn in the editor after the box showed takes the keyboard focus.
  await input.locator('input').press('Escape');
  await inspector.waitForStatus(/^Step 1: edit cancelled, nothing was sent\.$/);
  await inspector.frame.locator('#decide button.decide[data-action="stop"]:not([disabled])').waitFor({ timeout: 10_000 });

  // The Decide Turn quick pick takes the same path, and the inspector hears of its decision.
  await wb.runCommand('TBRL: Decide Turn');
  await wb.pick('Accept the verifier');
  await inspector.waitForPending(2);
  assert.match(await inspector.waitForStatus(/^Step 1: /), /^Step 1: running candidate 0 \(the verifier's pick\); no preference label/);
  await inspector.clickBar('stop');
  await dbg.waitForStopDescription(/run ended: cancelled/, 60_000);
  await inspector.waitForStatus(/^Step 2: stopping the run; nothing ran, no labels\.$/);

  // The run ended; the session stays open on its last step, and step back shows step 0 as it ran: nothing to decide.
  await inspector.waitForStep(1, 30_000);
  await dbg.toolbar('debug-step-back');
  await inspector.waitForStep(0, 30_000);
  assert.equal(await inspector.frame.locator('body[data-pending="false"]').count(), 1);
  assert.deepEqual(await inspector.decideButtons(), []);
  assert.deepEqual(await inspector.executed(), ['2']);
  assert.match(await inspector.meta(), /a human picked candidate 2/);
  await wb.screenshot('inspector-decide-03-ran');

  const [run] = readdirSync(join(workspace, 'runs'));
  const lines = readFileSync(join(workspace, 'runs', run, 'trajectory.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const steps = lines.filter((l) => l.type === 'step');
  assert.equal(steps.length, 2);
  assert.match(steps[1].actions[0].observation, /second-turn/);
  assert.equal(steps[0].chosenText, CANDIDATES[2]);
  assert.match(steps[0].actions[0].observation, /cand-two/);
  assert.equal(steps[0].decision.chosen, 0);
  const labels = readFileSync(join(workspace, 'runs', run, 'labels.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(labels.map((l) => [l.source, l.chosenIndex, l.rejectedIndex, l.human?.action]), [['human', 2, 0, 'pick'], ['human', 2, 1, 'pick']]);
  assert.equal(labels[0].chosen, CANDIDATES[2]);
  await dbg.stop();
});
