/**
 * The trace-graph webview fed a trajectory whose commands carry HTML/script payloads, rendered by
 * the real bundle in real Chromium under the Content-Security-Policy the panel sets
 * (src/extension/graph/panel.ts). The VS Code host side is played by a small script that answers
 * the webview's GetGraph request with the graph the extension would send (graphOfTrajectory).
 */
import { runTaskOk } from '../helpers/run';
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { graphOfTrajectory } from '../../src/extension/graph/data';
import { chaosCase, recordRunId } from './helpers/chaos';
import { attackTraces, openWebviewUnderCsp } from './helpers/webview-host';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import type { TrajectoryFooter } from '../../src/core/trajectory/schema';
import { buildStepView } from '../../webview/step-inspector/model';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-web-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

chaosCase('trace-graph panel CSP (static): default-src, script-src, no unsafe-*', 'default-src \'none\'; scripts only by nonce; no unsafe-inline / unsafe-eval / wildcard', async () => {
  const panel = readFileSync('src/extension/graph/panel.ts', 'utf8');
  // The page (CSP + nonce) may live in the helper every panel shares.
  const src = /webviewHtml\(/.test(panel) ? readFileSync('src/extension/webview/html.ts', 'utf8') : panel;
  const csp = /const csp = \[(.*?)\]\.join\('; '\)/s.exec(src)?.[1];
  assert.ok(csp, 'no CSP found in panel.ts or webview/html.ts');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-\$\{nonce\}'`/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.match(src, /<meta http-equiv="Content-Security-Policy" content="\$\{csp\}">/);
  assert.match(src, /<script nonce="\$\{nonce\}"/);
  const web = readFileSync('webview/trace-graph/main.ts', 'utf8') + readFileSync('webview/shared/ipc.ts', 'utf8');
  const sinks = web.match(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\.html\(/g) ?? [];
  assert.deepEqual(sinks, [], 'HTML sinks in the webview code');
  return `CSP: ${csp.replace(/`/g, '').replace(/\$\{webview\.cspSource\}/g, '<cspSource>').replace(/\s+/g, ' ')}; webview code has no innerHTML/outerHTML/insertAdjacentHTML/document.write/.html()`;
});

chaosCase('trajectory whose commands hold <img onerror>, <script> and </text> payloads rendered by the trace-graph webview in Chromium under the panel\'s CSP', 'payloads shown as text; no element injected, no script run, zero CSP violations', async () => {
  const payloads = ['<img src=x onerror="window.__xss=1">', '<script>window.__xss=2</script>', '</text><svg onload="window.__xss=3">'];
  const policy = new ScriptedPolicy(payloads.map((p, i) => `<bash>\ncmd: ${JSON.stringify(`echo '${p}' > /tmp/p${i}.html && cat /tmp/p${i}.html`)}\n</bash>`));
  const run = await runTaskOk({ taskDir: resolve('examples/hello-world'), outDir: join(scratch, 'run'), policyOverride: policy, skipReward: true, env: {} });
  recordRunId(run.runId);
  const graph = await graphOfTrajectory(run.trajectoryPath);
  assert.ok(graph.nodes.length >= 3, `the graph has ${graph.nodes.length} nodes (tracing: ${JSON.stringify(run.header.sandbox?.tracing)})`);
  const hostile = graph.nodes.filter((n) => payloads.some((p) => n.command.includes(p)));
  assert.equal(hostile.length, 3);

  const web = await openWebviewUnderCsp('trace-graph', 'traceGraph/getGraph', { graph, trajectory: run.trajectoryPath }, 'g.node.command');
  try {
    const { page, errors } = web;
    // Hover every hostile node so the tooltip (full command text) renders too.
    for (const n of hostile) await page.hover(`g.node.command[data-id="${n.id}"]`);
    const seen = await page.evaluate(() => ({
      texts: Array.from(document.querySelectorAll('g.node.command text')).map((t) => t.textContent ?? ''),
      tooltip: document.getElementById('tooltip')?.textContent ?? '',
      nodes: document.querySelectorAll('g.node.command').length,
    }));
    const attack = await attackTraces(page);
    assert.equal(attack.xss, undefined, 'a payload ran');
    assert.equal(attack.injected, 0, 'an element was injected');
    assert.deepEqual(attack.violations, []);
    assert.deepEqual(errors, []);
    assert.ok(seen.texts.some((t) => t.includes("echo '<img src=x oner")), seen.texts.join(' | '));
    assert.ok(seen.tooltip.includes(payloads[2]), `tooltip: ${seen.tooltip.slice(0, 200)}`);
    return `${seen.nodes} command nodes drawn; labels show e.g. ${JSON.stringify(seen.texts.find((t) => t.includes('<img')))} as text; tooltip shows the full </text><svg onload> payload as text; __xss unset, 0 injected elements, 0 CSP violations, 0 page errors`;
  } finally {
    await web.close();
  }
}, { timeout: 180_000 });

chaosCase('step-inspector panel CSP (static): the shared webview page and no HTML sinks in the inspector code', 'default-src \'none\'; scripts only by nonce; inspector panel uses the shared page; no innerHTML & co.', async () => {
  const src = readFileSync('src/extension/webview/html.ts', 'utf8');
  const csp = /const csp = \[(.*?)\]\.join\('; '\)/s.exec(src)?.[1];
  assert.ok(csp, 'no CSP found in src/extension/webview/html.ts');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-\$\{nonce\}'`/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.match(src, /<script nonce="\$\{nonce\}"/);
  const panel = readFileSync('src/extension/inspector/panel.ts', 'utf8');
  assert.match(panel, /webviewHtml\(panel\.webview, context\.extensionUri, 'step-inspector'/);
  assert.match(panel, /webviewOptions\(context\.extensionUri\)/);
  const web = readFileSync('webview/step-inspector/main.ts', 'utf8');
  const sinks = web.match(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\.html\(/g) ?? [];
  assert.deepEqual(sinks, [], 'HTML sinks in the inspector webview code');
  return 'inspector panel uses webviewHtml/webviewOptions (default-src none, script by nonce); main.ts has no HTML sinks';
});

chaosCase('step whose candidates, test names and judge components hold <img onerror>/<script> payloads rendered by the step-inspector webview in Chromium under the CSP', 'payloads shown as text; no element injected, no script run, zero CSP violations', async () => {
  const payloads = ['<img src=x onerror="window.__xss=1">', '<script>window.__xss=2</script>', '</text><svg onload="window.__xss=3">'];
  const t = parseTrajectory(syntheticTrajectory(4), 'hostile.jsonl');
  const step = t.steps[2];
  step.candidates = payloads.map((p) => ({ text: p, parses: true }));
  step.decision = { mode: 'pairwise', chosen: 1, scores: [0.1, 0.8, 0.1], matrix: [[0, -1, 0], [1, 0, 1], [0, -1, 0]], calls: 3, outputTokens: 9, parallelOutputTokens: 3, fallback: payloads[0] };
  const footer = t.footer as TrajectoryFooter;
  footer.reward = { tests: 0.5, testOutcomes: [{ name: payloads[1], status: 'passed', weight: 1 }, { name: payloads[2], status: 'failed', weight: 1 }], weights: { tests: 0.5, judge: 0.5 }, total: 0.5,
    judge: { score: 0.5, components: { [payloads[0]]: 0.5 }, promptVersion: payloads[1], backend: 'x' } };
  const payload = { trajectory: 'hostile.jsonl', view: buildStepView(payloads[2], t.steps, footer, 2) };

  const web = await openWebviewUnderCsp('step-inspector', 'stepInspector/getStep', payload, 'body[data-ready="true"]');
  try {
    const { page, errors } = web;
    const seen = await page.evaluate(() => ({
      candidates: Array.from(document.querySelectorAll('.candidate pre.text')).map((e) => e.textContent ?? ''),
      rewardNames: Array.from(document.querySelectorAll('#reward td.name')).map((e) => e.textContent ?? ''),
      meta: document.querySelector('.toolbar .meta')?.textContent ?? '',
      cells: document.querySelectorAll('#matrix g.cell').length,
    }));
    const attack = await attackTraces(page);
    assert.equal(attack.xss, undefined, 'a payload ran');
    assert.equal(attack.injected, 0, 'an element was injected');
    assert.deepEqual(attack.violations, []);
    assert.deepEqual(errors, []);
    assert.deepEqual(seen.candidates, payloads);
    for (const p of payloads) assert.ok(seen.rewardNames.includes(p), `reward names: ${seen.rewardNames.join(' | ')}`);
    assert.ok(seen.meta.includes(payloads[0]) && seen.meta.includes(payloads[2]), seen.meta);
    assert.equal(seen.cells, 6);
    return `3 candidate cards, test names, judge component, run id and fallback show the payloads as text; ${seen.cells} matrix cells; __xss unset, 0 injected elements, 0 CSP violations, 0 page errors`;
  } finally {
    await web.close();
  }
}, { timeout: 60_000 });
