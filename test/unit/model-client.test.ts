import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { getEventListeners } from 'node:events';
import { startOpenAIServer, type OpenAIServer } from '../helpers/openai-server';
import { ModelClient } from '../../src/core/model/client';
import { fitContext, estimateMessagesTokens, ELISION_PREFIX } from '../../src/core/model/context';
import { TbrlError } from '../../src/core/errors';
import type { ChatMessage, ModelConfig } from '../../src/core/model/types';

const KEY = 'sk-test-SECRET-123456';
const msgs: ChatMessage[] = [{ role: 'system', content: 'sys' }, { role: 'user', content: 'do it' }];
const fast = { retryBaseMs: 5, retryMaxMs: 20 };

async function withServer(fn: (srv: OpenAIServer, cfg: ModelConfig) => Promise<void>) {
  const srv = await startOpenAIServer({ models: ['gen'], apiKey: KEY });
  try {
    await fn(srv, { baseUrl: srv.baseUrl, model: 'gen', apiKey: KEY, maxRetries: 3 });
  } finally {
    await srv.close();
  }
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<TbrlError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof TbrlError, `expected TbrlError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.ok(!e.message.includes(KEY), 'the API key leaked into the error');
    return e;
  }
  assert.fail(`expected ${code}`);
}

test('n honoured: one call, N distinct choices, usage and latency per call', async () => {
  await withServer(async (srv, cfg) => {
    srv.enqueue(['aaaa', 'bbbbbbbb', 'cc']);
    const r = await new ModelClient(cfg).sample(msgs, 3);
    assert.deepEqual(r.completions.map((c) => c.text), ['aaaa', 'bbbbbbbb', 'cc']);
    assert.equal(srv.requests.length, 1);
    assert.equal(srv.requests[0].n, 3);
    assert.equal(r.usage.completionTokens, 1 + 2 + 1);
    assert.equal(r.calls?.length, 1);
    assert.ok(r.latencyMs >= 0);
    assert.equal(srv.requests[0].authorization, `Bearer ${KEY}`);
    assert.equal(r.completions[0].logprobSum, undefined);
    srv.enqueue(['one two three', 'four']);
    const lp = await new ModelClient({ ...cfg, logprobs: true }).sample(msgs, 2);
    assert.equal(srv.requests[1].body.logprobs, true);
    assert.deepEqual(lp.completions.map((c) => c.logprobSum), [-0.75, -0.25]);
  });
});

test('server ignores n: tops up with parallel single requests, then skips n next time', async () => {
  await withServer(async (srv, cfg) => {
    srv.ignoreN = true;
    let i = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    srv.respond = async () => {
      const text = `cand-${i++}`;
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 300));
      inFlight--;
      return text;
    };
    const client = new ModelClient({ ...cfg, concurrency: 8 });
    const r = await client.sample(msgs, 5);
    assert.equal(r.completions.length, 5);
    assert.equal(new Set(r.completions.map((c) => c.text)).size, 5);
    assert.equal(srv.requests.length, 5);
    // 1 probing call, then the 4 top-ups overlap rather than queue.
    assert.equal(maxInFlight, 4, 'top-ups were not parallel');
    srv.respond = () => 'again';
    await client.sample(msgs, 2);
    assert.deepEqual(srv.requests.slice(5).map((q) => q.body.n), [undefined, undefined]);
  });
});

test('wrong n (2 of 4) tops up the missing ones; concurrency limit respected', async () => {
  await withServer(async (srv, cfg) => {
    srv.enqueue(['x', 'y']);
    srv.latencyMs = 60;
    srv.respond = () => 'z';
    const r = await new ModelClient({ ...cfg, concurrency: 1 }).sample(msgs, 4);
    assert.deepEqual(r.completions.map((c) => c.text), ['x', 'y', 'z', 'z']);
    const [, a, b] = srv.requests;
    assert.ok(b.receivedAt - a.receivedAt >= 50, 'concurrency 1 should serialise top-ups');
  });
});

test('server refusing n (HTTP 400) falls back to parallel requests; a bad request still fails clearly', async () => {
  await withServer(async (srv, cfg) => {
    srv.respond = (req) => (req.n > 1 ? { status: 400, error: { message: "'n' is not supported" } } : 'one');
    const r = await new ModelClient(cfg).sample(msgs, 3);
    assert.deepEqual(r.completions.map((c) => c.text), ['one', 'one', 'one']);
    assert.deepEqual(srv.requests.map((q) => q.n), [3, 1, 1, 1]);
    srv.respond = () => ({ status: 400, error: { message: 'max_tokens too large' } });
    const e = await rejectsWith(new ModelClient(cfg).sample(msgs, 2), 'model-bad-request');
    assert.match(e.message, /max_tokens too large/);
  });
});

test('retries 429, 500, dropped connection and malformed JSON, then succeeds', async () => {
  await withServer(async (srv, cfg) => {
    srv.enqueue({ status: 429 }, { status: 500 }, { drop: true }, { malformed: true }, 'finally');
    const lines: string[] = [];
    const r = await new ModelClient({ ...cfg, maxRetries: 4 }, { ...fast, log: (l) => lines.push(l) }).sample(msgs, 1);
    assert.equal(r.completions[0].text, 'finally');
    assert.equal(r.calls?.[0].attempts, 5);
    assert.equal(srv.calls, 5);
    assert.equal(lines.length, 4);
  });
});

test('retries are bounded and end in a clear error', async () => {
  await withServer(async (srv, cfg) => {
    srv.respond = () => ({ status: 503 });
    const e = await rejectsWith(new ModelClient({ ...cfg, maxRetries: 2 }, fast).sample(msgs), 'model-server-error');
    assert.match(e.message, /3 attempts/);
    assert.equal(srv.calls, 3);
    srv.respond = () => ({ status: 429 });
    await rejectsWith(new ModelClient({ ...cfg, maxRetries: 1 }, fast).sample(msgs), 'model-rate-limited');
    srv.respond = () => ({ emptyChoices: true });
    await rejectsWith(new ModelClient({ ...cfg, maxRetries: 1 }, fast).sample(msgs), 'model-malformed-answer');
  });
});

test('timeouts are retried then reported', async () => {
  await withServer(async (srv, cfg) => {
    srv.respond = () => ({ latencyMs: 300, choices: ['late'] });
    const e = await rejectsWith(new ModelClient({ ...cfg, timeoutMs: 50, maxRetries: 1 }, fast).sample(msgs), 'model-timeout');
    assert.match(e.message, /50 ms/);
  });
});

test('bad key: no retry, names the endpoint, never the key', async () => {
  await withServer(async (srv, cfg) => {
    const e = await rejectsWith(new ModelClient({ ...cfg, apiKey: 'sk-wrong-key-999' }, fast).sample(msgs), 'model-auth');
    assert.ok(e.message.includes(srv.baseUrl));
    assert.ok(!e.message.includes('sk-wrong-key-999'));
    assert.equal(srv.calls, 1);
  });
});

test('unknown model lists what the server serves', async () => {
  await withServer(async (srv, cfg) => {
    srv.models = ['gen', 'llama-3-8b'];
    const e = await rejectsWith(new ModelClient({ ...cfg, model: 'gpt-9' }, fast).sample(msgs), 'model-unknown');
    assert.match(e.message, /gpt-9/);
    assert.match(e.message, /gen, llama-3-8b/);
    srv.modelsEndpoint = false;
    const e2 = await rejectsWith(new ModelClient({ ...cfg, model: 'gpt-9' }, fast).sample(msgs), 'model-unknown');
    assert.match(e2.message, /does not list/);
  });
});

test('unreachable endpoint names the URL', async () => {
  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const url = `http://127.0.0.1:${port}/v1`;
  const e = await rejectsWith(new ModelClient({ baseUrl: url, model: 'm', apiKey: KEY, maxRetries: 1 }, fast).sample(msgs), 'model-unreachable');
  assert.ok(e.message.includes(url));
  assert.match(e.message, /ECONNREFUSED/);
});

test('bad config is a clear error before any call', () => {
  assert.throws(() => new ModelClient({ baseUrl: 'localhost:8000', model: 'm' }), (e: TbrlError) => e.code === 'model-config' && /http/.test(e.fix ?? ''));
});

test('context budget elides the oldest observations with a marker naming the turn', () => {
  const big = 'x'.repeat(4000);
  const conv: ChatMessage[] = [
    { role: 'system', content: 'system prompt' },
    { role: 'user', content: 'instruction: fix the bug' },
    { role: 'assistant', content: '<bash>cmd: ls</bash>' },
    { role: 'user', content: big },
    { role: 'assistant', content: '<bash>cmd: cat a</bash>' },
    { role: 'user', content: big },
    { role: 'assistant', content: '<bash>cmd: cat b</bash>' },
    { role: 'user', content: big },
  ];
  const total = estimateMessagesTokens(conv);
  assert.deepEqual(fitContext(conv, total + 10).elided, []);
  const fitted = fitContext(conv, 2300, 200);
  assert.deepEqual(fitted.elided, [3]);
  assert.ok(fitted.messages[3].content.startsWith(ELISION_PREFIX));
  assert.match(fitted.messages[3].content, /turn 1: 4000 characters/);
  assert.equal(fitted.messages[1].content, conv[1].content, 'instruction kept');
  assert.equal(fitted.messages[7].content, big, 'latest observation kept');
  assert.equal(fitted.messages.length, conv.length, 'nothing dropped');
  const tighter = fitContext(conv, 1300);
  assert.deepEqual(tighter.elided, [3, 5]);
  assert.match(tighter.messages[5].content, /turn 2/);
  assert.throws(() => fitContext(conv, 500), (e: TbrlError) => e.code === 'context-overflow');
});

test('sample() sends the elided conversation and reports the indices', async () => {
  await withServer(async (srv, cfg) => {
    srv.respond = () => 'ok';
    const conv: ChatMessage[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'o'.repeat(2000) },
      { role: 'assistant', content: 'a2' },
      { role: 'user', content: 'latest' },
    ];
    const r = await new ModelClient({ ...cfg, contextTokens: 300, maxTokens: 100 }).sample(conv, 1);
    assert.deepEqual(r.elided, [2]);
    assert.match(srv.requests[0].messages[2].content, /elided observation of turn 1/);
    assert.equal(srv.requests[0].body.max_tokens, 100);
  });
});

test('abort cancels a call in flight without retrying', async () => {
  await withServer(async (srv, cfg) => {
    const ac = new AbortController();
    // Abort only once the request is really in flight at the server.
    srv.respond = () => {
      setTimeout(() => ac.abort('user pressed stop'), 20);
      return { latencyMs: 2000, choices: ['late'] };
    };
    const t0 = Date.now();
    await rejectsWith(new ModelClient(cfg, fast).sample(msgs, 1, { signal: ac.signal }), 'cancelled');
    assert.ok(Date.now() - t0 < 1500);
    assert.equal(srv.calls, 1);
  });
});

test('calls and retries under one long-lived signal leave no abort listener on it (no MaxListenersExceededWarning)', async () => {
  await withServer(async (srv, cfg) => {
    srv.respond = () => ({ status: 500 });
    const ac = new AbortController();
    const client = new ModelClient(cfg, fast);
    // 3 samples x 4 attempts: before the fix, 12 SDK listeners and 9 backoff listeners stayed on the signal.
    for (let i = 0; i < 3; i++) await rejectsWith(client.sample(msgs, 1, { signal: ac.signal }), 'model-server-error');
    assert.equal(srv.calls, 12);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    srv.respond = () => 'ok';
    assert.equal((await client.sample(msgs, 1, { signal: ac.signal })).completions[0].text, 'ok');
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  });
});
