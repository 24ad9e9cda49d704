/**
 * Ray Jobs API answers and a Ray that goes away during log tailing. The shared Ray head on this
 * machine cannot be made to answer garbage or be stopped mid-test (other engineers' trainer tests
 * use it), so a local HTTP + websocket server speaking the Jobs API paths injects the faults —
 * the same approach as test/helpers/openai-server.ts for the model endpoint. The happy path against
 * the real head is test/integration/trainer-ray.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import fc from 'fast-check';
import { WebSocketServer, type WebSocket } from 'ws';
import { RayJobsClient } from '../../src/core/trainer/jobs';
import { TbrlError } from '../../src/core/errors';
import { chaosCase } from './helpers/chaos';

const SEED = Number(process.env.TBRL_FUZZ_SEED ?? 20261130);

interface Answer { status: number; body: string; contentType?: string; hang?: boolean; drop?: boolean }
type Handler = (req: IncomingMessage) => Answer;

async function startRay(handler: Handler, onTail?: (ws: WebSocket) => void) {
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const a = handler(req);
    if (a.drop) return req.socket.destroy();
    if (a.hang) return;
    res.writeHead(a.status, { 'content-type': a.contentType ?? 'application/json' });
    res.end(a.body);
  });
  server.on('connection', (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!onTail) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onTail(ws));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    /** The head node going away: refuse new connections and cut the open ones. */
    close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

const job = (status: string) => JSON.stringify({ type: 'SUBMISSION', submission_id: 'j1', job_id: null, status, entrypoint: 'python -m x', message: null, metadata: {}, runtime_env: {} });
const bodies = fc.oneof(
  fc.constantFrom(
    '', '{', 'null', '[]', '{}', '"text"', '<html><body>502 Bad Gateway</body></html>', 'Traceback (most recent call last):\n  File "x"\nKeyError: \'j1\'',
    '{"ray_version": 2}', '{"ray_version": "1.13.0"}', '{"ray_version": "2.40.0", "version": "4"}', '{"logs": 5}', '{"stopped": "yes"}', job('RUNNING'), job('BOGUS'), job('SUCCEEDED').slice(0, 40),
  ),
  fc.string({ maxLength: 50 }),
);
const answers = fc.record({ status: fc.constantFrom(200, 200, 200, 404, 500, 502, 401, 403, 301, 204), body: bodies, contentType: fc.constantFrom('application/json', 'text/html') });
const calls: Array<[string, (c: RayJobsClient) => Promise<unknown>]> = [
  ['version', (c) => c.version()],
  ['find', (c) => c.find('j1')],
  ['status', (c) => c.status('j1')],
  ['list', (c) => c.list()],
  ['logs', (c) => c.logs('j1')],
  ['stop', (c) => c.stop('j1')],
  ['delete', (c) => c.delete('j1')],
  ['packageExists', (c) => c.packageExists('gcs://_ray_pkg_abc.zip')],
];

chaosCase('Ray Jobs API answering garbage: 400 random (status, body) pairs across version/find/status/list/logs/stop/delete/package calls; then refused, dropped and silent connections', 'each call returns a value or throws a TbrlError with a code and a fix; never a raw SyntaxError/TypeError', async () => {
  let current: Answer = { status: 200, body: '{}' };
  const ray = await startRay(() => current);
  const raw: string[] = [];
  const codes = new Map<string, number>();
  let values = 0;
  try {
    const client = new RayJobsClient({ url: ray.url, timeoutMs: 2000 });
    await fc.assert(fc.asyncProperty(answers, fc.constantFrom(...calls), async (a, [name, call]) => {
      current = a;
      try {
        await call(client);
        values++;
      } catch (err) {
        if (!(err instanceof TbrlError) || !err.fix) {
          raw.push(`${name} on HTTP ${a.status} ${JSON.stringify(a.body.slice(0, 40))}: ${(err as Error).name}: ${(err as Error).message.slice(0, 80)}`);
          return;
        }
        codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
      }
    }), { numRuns: 400, seed: SEED });
    for (const [label, a] of [['dropped', { status: 0, body: '', drop: true }], ['silent', { status: 0, body: '', hang: true }]] as const) {
      current = a;
      await assert.rejects(new RayJobsClient({ url: ray.url, timeoutMs: 300 }).version(), (err: unknown) => {
        assert.ok(err instanceof TbrlError && err.code === 'ray-unreachable', `${label}: ${String(err)}`);
        return true;
      });
    }
  } finally {
    await ray.close();
  }
  await assert.rejects(new RayJobsClient({ url: ray.url, timeoutMs: 1000 }).version(), (err: unknown) => err instanceof TbrlError && err.code === 'ray-unreachable');
  const summary = `${values} values, TbrlErrors ${[...codes].map(([k, v]) => `${k}×${v}`).join(', ')}; dropped/silent/refused → ray-unreachable`;
  assert.deepEqual([...new Set(raw)].slice(0, 8), [], `raw errors (${raw.length}) — ${summary}`);
  return summary;
}, { timeout: 120_000 });

chaosCase('Ray goes away during `tail`: the log socket drops twice mid-stream (job RUNNING), then the head node disappears', 'reconnects without repeating delivered text, then ray-tail-failed naming the job and how to re-attach', async () => {
  const log = Array.from({ length: 6 }, (_, i) => `line ${i}\n`).join('');
  let connections = 0;
  let up = true;
  const ray = await startRay(() => ({ status: 200, body: job('RUNNING') }), (ws) => {
    connections++;
    // Ray replays the log from its start on every connection; each connection gets further before dropping.
    const upTo = Math.min(log.length, connections * 14);
    ws.send(log.slice(0, upTo));
    setTimeout(() => ws.terminate(), 50);
  });
  const received: string[] = [];
  const t0 = Date.now();
  try {
    const client = new RayJobsClient({ url: ray.url, timeoutMs: 1000 });
    const tail = client.tail('j1', (t) => received.push(t), { maxReconnects: 3, reconnectDelayMs: 100 });
    const watcher = (async () => {
      while (connections < 2) await new Promise((r) => setTimeout(r, 20));
      await ray.close();
      up = false;
    })();
    await assert.rejects(tail, (err: unknown) => {
      assert.ok(err instanceof TbrlError, String(err));
      assert.equal(err.code, 'ray-tail-failed');
      assert.match(err.message, /job j1/);
      assert.match(err.fix ?? '', /tbrl train logs j1 --follow/);
      received.push(`\n[${err.message.split('\n')[0]}]`);
      return true;
    });
    await watcher;
  } finally {
    if (up) await ray.close();
  }
  const text = received.slice(0, -1).join('');
  assert.ok(log.startsWith(text), `duplicated or out-of-order text: ${JSON.stringify(text)}`);
  assert.ok(text.length >= 14, 'nothing was delivered before the drop');
  return `${connections} connection(s), ${text.length} B delivered once (no repeats), then after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${received.at(-1)!.trim().slice(0, 140)}`;
}, { timeout: 60_000 });
