import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { serveEnvironment } from '../../src/core/envserver/server';
import { PARAM_BOUNDS } from '../../src/core/envserver/params';

interface Reply { id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: { field?: string } } }

/** Serves the given request lines (objects or raw text) in-process and returns one reply per request. */
async function serve(requests: (object | string)[]): Promise<Reply[]> {
  const input = new PassThrough();
  const output = new PassThrough();
  const replies: Reply[] = [];
  let buffered = '';
  output.on('data', (c: Buffer) => {
    buffered += c.toString();
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      replies.push(JSON.parse(buffered.slice(0, nl)) as Reply);
      buffered = buffered.slice(nl + 1);
    }
  });
  const done = serveEnvironment({ input, output });
  for (const r of requests) input.write(typeof r === 'string' ? r : JSON.stringify(r) + '\n');
  input.end();
  await done;
  return replies;
}

const vectorDir = join(__dirname, '..', 'vectors', 'depgpo');
const vector = JSON.parse(readFileSync(join(vectorDir, readdirSync(vectorDir).filter((f) => f.endsWith('.json')).sort()[0]), 'utf8')) as { input: { commands: { step: number }[]; stepTokens: number[] } };
const call = (id: number, params: unknown) => ({ jsonrpc: '2.0', id, method: 'credit', params });

test('a credit request whose command step is 4e9 is answered -32602 naming the field, quickly and without allocating', async () => {
  const input = structuredClone(vector.input);
  input.commands[0].step = 4e9;
  const before = process.memoryUsage().rss;
  const started = Date.now();
  const [reply] = await serve([call(1, { input })]);
  assert.equal(reply.error?.code, -32602, JSON.stringify(reply));
  assert.equal(reply.error?.data?.field, 'params.input.commands[0].step');
  assert.match(reply.error!.message, /commands\[0\]\.step/);
  assert.ok(Date.now() - started < 2000);
  assert.ok(process.memoryUsage().rss - before < 100 * 1024 ** 2);
});

test('wrong types anywhere in a DepGPO input name the field; huge hunks and ports out of range are refused', async () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- hostile inputs are deliberately untyped
  type Loose = Record<string, any>;
  const bad = (mutate: (i: Loose) => void) => { const i = structuredClone(vector.input) as Loose; mutate(i); return i; };
  const replies = await serve([
    call(1, { input: bad((i) => { i.stepTokens = 'x'; }) }),
    call(2, { input: bad((i) => { i.commands = {}; }) }),
    call(3, { input: bad((i) => { i.commands[0].trace = { reads: [], writes: [{ path: '/a', linesAfter: 1, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 4e9 }] }], stdoutValues: [], ports: [], processes: [] }; }) }),
    call(4, { input: bad((i) => { i.commands[0].trace = { reads: [], writes: [], stdoutValues: [], ports: [70000], processes: [] }; }) }),
    call(5, { input: bad((i) => { i.stepTokens = new Array(PARAM_BOUNDS.maxSteps + 1).fill(1); }) }),
    call(6, { groupAdvantage: 'big' }),
    { jsonrpc: '2.0', id: 7, method: 'credit', params: [1, 2] },
    call(8, { trajectory: 42 }),
  ]);
  const fields = replies.map((r) => [r.id, r.error?.code, r.error?.data?.field]);
  assert.deepEqual(fields, [
    [1, -32602, 'params.input.stepTokens'],
    [2, -32602, 'params.input.commands'],
    [3, -32602, 'params.input.commands[0].trace.writes[0].hunks[0].newLines'],
    [4, -32602, 'params.input.commands[0].trace.ports[0]'],
    [5, -32602, 'params.input.stepTokens'],
    [6, -32602, 'params.groupAdvantage'],
    [7, -32602, 'params'],
    [8, -32602, 'params.trajectory'],
  ]);
});

test('a valid DepGPO input still gets its credit', async () => {
  const [reply] = await serve([call(1, { input: vector.input })]);
  assert.ok(Array.isArray(reply.result?.factors), JSON.stringify(reply).slice(0, 300));
});

test('a request line over the size bound is dropped with an error and the next request is served', async () => {
  const huge = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"${'x'.repeat(PARAM_BOUNDS.maxRequestBytes + 10)}"}}\n`;
  const replies = await serve([huge, { jsonrpc: '2.0', id: 2, method: 'initialize' }]);
  assert.equal(replies[0].error?.code, -32600);
  assert.match(replies[0].error!.message, /over \d+ bytes/);
  assert.equal(replies[1].id, 2);
  assert.ok(replies[1].result);
});
