import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as esbuild from 'esbuild';
import { chromium, type Page } from 'playwright-core';

const CHROMIUM = process.env.TBRL_CHROMIUM ?? '/usr/bin/chromium';

export interface HostedWebview {
  page: Page;
  /** Page errors and console errors seen so far. */
  errors: string[];
  close(): Promise<void>;
}

/**
 * One webview app rendered as its panel renders it: the real bundle and stylesheet under the
 * panel's Content-Security-Policy with a fresh nonce, in real Chromium. A stand-in for the VS Code
 * host answers the app's `method` request with `payload` (JSON inside the host script, '<' escaped
 * so a payload's </script> stays data) and records CSP violations in `window.__violations`.
 */
export async function openWebviewUnderCsp(app: string, method: string, payload: unknown, readySelector: string): Promise<HostedWebview> {
  const bundle = await esbuild.build({ entryPoints: [`webview/${app}/main.ts`], bundle: true, platform: 'browser', format: 'iife', target: 'es2022', write: false, logLevel: 'silent' });
  const script = bundle.outputFiles[0].text;
  const css = readFileSync(`media/${app}.css`, 'utf8');
  const nonce = randomBytes(16).toString('base64');
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/main.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url === '/style.css') return res.writeHead(200, { 'content-type': 'text/css' }).end(css);
    // The same policy as src/extension/webview/html.ts, with this server as the webview's cspSource.
    const csp = [`default-src 'none'`, `style-src ${origin}`, `img-src ${origin} data:`, `script-src 'nonce-${nonce}'`, `font-src ${origin}`].join('; ');
    const host = `window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
const payload = ${JSON.stringify(payload).replace(/</g, '\\u003c')};
window.acquireVsCodeApi = () => ({
  getState: () => undefined, setState: () => {},
  postMessage: (m) => { if (m.type === 'request') setTimeout(() => window.postMessage({ tbrl: 1, type: 'reply', id: m.id, result: m.method === ${JSON.stringify(method)} ? payload : { selected: false } }, '*')); },
});`;
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!DOCTYPE html><html><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}"><link rel="stylesheet" href="/style.css"></head>
<body><script nonce="${nonce}">${host}</script><script nonce="${nonce}" src="/main.js"></script></body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const close = async () => {
    await browser.close();
    await new Promise<void>((r) => server.close(() => r()));
  };
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForSelector(readySelector, { timeout: 15_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message.split('\n')[0]}; page errors: ${errors.join(' | ')}; body: ${(await page.content()).slice(0, 300)}`);
    });
    return { page, errors, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** What hostile payloads could have done to the page: a script ran, an element got in, the CSP fired. */
export function attackTraces(page: Page): Promise<{ xss: number | undefined; violations: string[]; injected: number }> {
  return page.evaluate(() => ({
    xss: (window as unknown as { __xss?: number }).__xss,
    violations: (window as unknown as { __violations: string[] }).__violations,
    injected: document.querySelectorAll('img, svg svg, script:not([nonce]), iframe, [onerror], [onload]').length,
  }));
}
