import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ModelClient } from '../../src/core/model/client';
import { createModelPolicy } from '../../src/core/agent/model-policy';
import type { Task } from '../../src/core/tasks/model';

/** A vLLM-shaped server: token ids with return_token_ids, or a strict one that refuses the field. */
async function serve(strict: boolean) {
  const bodies: Array<Record<string, unknown>> = [];
  let turn = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c)).on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      bodies.push(body);
      if (strict && 'return_token_ids' in body) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Unrecognized request argument supplied: return_token_ids', type: 'invalid_request_error' } }));
        return;
      }
      turn++;
      const prompt = turn === 1 ? [1, 2, 3] : [1, 2, 3, 40, 41, 7];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        id: 'x', object: 'chat.completion', created: 0, model: 'm',
        choices: [0, 1].map((i) => ({
          index: i, finish_reason: i ? 'length' : 'stop', message: { role: 'assistant', content: `<bash>\ncmd: echo ${i}\n</bash>` },
          logprobs: { content: [{ token: 'a', logprob: -0.5, bytes: [97], top_logprobs: [] }, { token: 'b', logprob: -1, bytes: [98], top_logprobs: [] }] },
          ...(body.return_token_ids ? { token_ids: [40 + i, 41] } : {}),
        })),
        usage: { prompt_tokens: prompt.length, completion_tokens: 4 },
        ...(body.return_token_ids ? { prompt_token_ids: prompt } : {}),
      }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test('token ids, per-token logprobs and finish reasons reach the candidates; prompt ids become a delta', async () => {
  const srv = await serve(false);
  try {
    const policy = createModelPolicy({ baseUrl: srv.baseUrl, model: 'm', logprobs: true, maxRetries: 0 }, { n: 2, price: { promptPerMTok: 1, completionPerMTok: 2 } });
    const ctx = { task: { instruction: 'x' } as Task, messages: [{ role: 'user' as const, content: 'x' }], step: 0 };
    const t1 = await policy.next(ctx);
    assert.equal(srv.bodies[0].return_token_ids, true);
    assert.deepEqual(t1.candidates.map((c) => [c.tokenIds, c.logprobs, c.finishReason, c.completionTokens]), [[[40, 41], [-0.5, -1], 'stop', 2], [[41, 41], [-0.5, -1], 'length', 2]]);
    assert.equal(t1.candidates[0].logprobSum, -1.5);
    assert.deepEqual([t1.prompt?.keep, t1.prompt?.append], [0, [1, 2, 3]]);
    assert.equal(t1.costUsd, (3 * 1 + 4 * 2) / 1e6);
    const t2 = await policy.next({ ...ctx, step: 1 });
    assert.deepEqual([t2.prompt?.tokens, t2.prompt?.keep, t2.prompt?.append], [6, 3, [40, 41, 7]]);
  } finally {
    await srv.close();
  }
});

test('a strict server that refuses return_token_ids is asked again without it, once per client', async () => {
  const srv = await serve(true);
  const logs: string[] = [];
  try {
    const client = new ModelClient({ baseUrl: srv.baseUrl, model: 'm', maxRetries: 0 }, { log: (l) => logs.push(l) });
    const a = await client.sample([{ role: 'user', content: 'x' }], 2);
    await client.sample([{ role: 'user', content: 'y' }], 2);
    assert.equal(a.completions.length, 2);
    assert.equal(a.promptTokenIds, undefined);
    assert.equal(a.completions[0].tokenIds, undefined);
    assert.deepEqual(srv.bodies.map((b) => 'return_token_ids' in b), [true, false, false]);
    assert.match(logs.join('\n'), /refused return_token_ids/);
  } finally {
    await srv.close();
  }
});
