/**
 * The trace-graph webview fed a trajectory whose commands carry HTML/script payloads, rendered by
 * the real bundle in real Chromium under the Content-Security-Policy the panel sets
 * (src/extension/graph/panel.ts). The VS Code host side is played by a small script that answers
 * the webview's GetGraph request with the graph the extension would send (graphOfTrajectory).
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { runTask } from '../../src/core/run/run-task';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { graphOfTrajectory } from '../../src/extension/graph/data';
import { chaosCase, recordRunId } from './helpers/chaos';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import type { TrajectoryFooter } from '../../src/core/trajectory/schema';
import { buildStepView } from '../../webview/step-inspector/model';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-web-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const CHROMIUM = process.env.TBRL_CHROMIUM ?? '/usr/bin/chromium';

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
  const run = await runTask({ taskDir: resolve('examples/hello-world'), outDir: join(scratch, 'run'), policyOverride: policy, skipReward: true, env: {} });
  recordRunId(run.runId);
  const graph = await graphOfTrajectory(run.trajectoryPath);
  assert.ok(graph.nodes.length >= 3, `the graph has ${graph.nodes.length} nodes (tracing: ${JSON.stringify(run.header.sandbox?.tracing)})`);
  const hostile = graph.nodes.filter((n) => payloads.some((p) => n.command.includes(p)));
  assert.equal(hostile.length, 3);

  const bundle = await esbuild.build({ entryPoints: ['webview/trace-graph/main.ts'], bundle: true, platform: 'browser', format: 'iife', target: 'es2022', write: false, logLevel: 'silent' });
  const script = bundle.outputFiles[0].text;
  const css = readFileSync('media/trace-graph.css', 'utf8');
  const nonce = randomBytes(16).toString('base64');
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/main.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url === '/style.css') return res.writeHead(200, { 'content-type': 'text/css' }).end(css);
    // The same policy as panel.ts, with this server as the webview's cspSource.
    const csp = [`default-src 'none'`, `style-src ${origin}`, `img-src ${origin} data:`, `script-src 'nonce-${nonce}'`, `font-src ${origin}`].join('; ');
    // The graph goes in as JSON inside this host script; '<' is escaped so a payload's </script> stays data.
    const host = `window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
const payload = ${JSON.stringify({ graph, trajectory: run.trajectoryPath }).replace(/</g, '\\u003c')};
window.acquireVsCodeApi = () => ({
  getState: () => undefined, setState: () => {},
  postMessage: (m) => { if (m.type === 'request') setTimeout(() => window.postMessage({ tbrl: 1, type: 'reply', id: m.id, result: m.method === 'traceGraph/getGraph' ? payload : { selected: false } }, '*')); },
});`;
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!DOCTYPE html><html><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}"><link rel="stylesheet" href="/style.css"></head>
<body><script nonce="${nonce}">${host}</script><script nonce="${nonce}" src="/main.js"></script></body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForSelector('g.node.command', { timeout: 15_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message.split('\n')[0]}; page errors: ${errors.join(' | ')}; body: ${(await page.content()).slice(0, 300)}`);
    });
    // Hover every hostile node so the tooltip (full command text) renders too.
    for (const n of hostile) await page.hover(`g.node.command[data-id="${n.id}"]`);
    const seen = await page.evaluate(() => ({
      xss: (window as unknown as { __xss?: number }).__xss,
      violations: (window as unknown as { __violations: string[] }).__violations,
      injected: document.querySelectorAll('img, svg svg, script:not([nonce]), iframe, [onerror], [onload]').length,
      texts: Array.from(document.querySelectorAll('g.node.command text')).map((t) => t.textContent ?? ''),
      tooltip: document.getElementById('tooltip')?.textContent ?? '',
      nodes: document.querySelectorAll('g.node.command').length,
    }));
    assert.equal(seen.xss, undefined, 'a payload ran');
    assert.equal(seen.injected, 0, 'an element was injected');
    assert.deepEqual(seen.violations, []);
    assert.deepEqual(errors, []);
    assert.ok(seen.texts.some((t) => t.includes("echo '<img src=x oner")), seen.texts.join(' | '));
    assert.ok(seen.tooltip.includes(payloads[2]), `tooltip: ${seen.tooltip.slice(0, 200)}`);
    return `${seen.nodes} command nodes drawn; labels show e.g. ${JSON.stringify(seen.texts.find((t) => t.includes('<img')))} as text; tooltip shows the full </text><svg onload> payload as text; __xss unset, 0 injected elements, 0 CSP violations, 0 page errors`;
  } finally {
    await browser.close();
    await new Promise<void>((r) => server.close(() => r()));
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

  const bundle = await esbuild.build({ entryPoints: ['webview/step-inspector/main.ts'], bundle: true, platform: 'browser', format: 'iife', target: 'es2022', write: false, logLevel: 'silent' });
  const script = bundle.outputFiles[0].text;
  const css = readFileSync('media/step-inspector.css', 'utf8');
  const nonce = randomBytes(16).toString('base64');
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/main.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url === '/style.css') return res.writeHead(200, { 'content-type': 'text/css' }).end(css);
    const csp = [`default-src 'none'`, `style-src ${origin}`, `img-src ${origin} data:`, `script-src 'nonce-${nonce}'`, `font-src ${origin}`].join('; ');
    const host = `window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
const payload = ${JSON.stringify(payload).replace(/</g, '\\u003c')};
window.acquireVsCodeApi = () => ({
  getState: () => undefined, setState: () => {},
  postMessage: (m) => { if (m.type === 'request') setTimeout(() => window.postMessage({ tbrl: 1, type: 'reply', id: m.id, result: m.method === 'stepInspector/getStep' ? payload : { selected: false } }, '*')); },
});`;
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!DOCTYPE html><html><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}"><link rel="stylesheet" href="/style.css"></head>
<body><script nonce="${nonce}">${host}</script><script nonce="${nonce}" src="/main.js"></script></body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 }).catch((err: Error) => { throw new Error(`${err.message.split('\n')[0]}; page errors: ${errors.join(' | ')}`); });
    const seen = await page.evaluate(() => ({
      xss: (window as unknown as { __xss?: number }).__xss,
      violations: (window as unknown as { __violations: string[] }).__violations,
      injected: document.querySelectorAll('img, svg svg, script:not([nonce]), iframe, [onerror], [onload]').length,
      candidates: Array.from(document.querySelectorAll('.candidate pre.text')).map((e) => e.textContent ?? ''),
      rewardNames: Array.from(document.querySelectorAll('#reward td.name')).map((e) => e.textContent ?? ''),
      meta: document.querySelector('.toolbar .meta')?.textContent ?? '',
      cells: document.querySelectorAll('#matrix g.cell').length,
    }));
    assert.equal(seen.xss, undefined, 'a payload ran');
    assert.equal(seen.injected, 0, 'an element was injected');
    assert.deepEqual(seen.violations, []);
    assert.deepEqual(errors, []);
    assert.deepEqual(seen.candidates, payloads);
    for (const p of payloads) assert.ok(seen.rewardNames.includes(p), `reward names: ${seen.rewardNames.join(' | ')}`);
    assert.ok(seen.meta.includes(payloads[0]) && seen.meta.includes(payloads[2]), seen.meta);
    assert.equal(seen.cells, 6);
    return `3 candidate cards, test names, judge component, run id and fallback show the payloads as text; ${seen.cells} matrix cells; __xss unset, 0 injected elements, 0 CSP violations, 0 page errors`;
  } finally {
    await browser.close();
    await new Promise<void>((r) => server.close(() => r()));
  }
}, { timeout: 60_000 });
