// The scripted OpenAI-compatible server itself, driven by the real `openai` client: other suites
// rely on these behaviours, so they are pinned here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIServer } from '../helpers/openai-server';

test('honours n, records requests, counts usage; ignoreN returns one choice', async () => {
  const srv = await startOpenAIServer({ models: ['m'], apiKey: 'k' });
  try {
    const client = new OpenAI({ baseURL: srv.baseUrl, apiKey: 'k', maxRetries: 0 });
    srv.enqueue('abcdefgh');
    const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], n: 3 });
    assert.equal(r.choices.length, 3);
    assert.equal(r.choices[2].message.content, 'abcdefgh');
    assert.deepEqual([r.usage?.prompt_tokens, r.usage?.completion_tokens], [1, 6]);
    assert.equal(srv.requests[0].n, 3);
    srv.ignoreN = true;
    srv.respond = (req) => `echo ${req.messages.at(-1)?.content}`;
    const one = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 4 });
    assert.deepEqual(one.choices.map((c) => c.message.content), ['echo x']);
  } finally {
    await srv.close();
  }
});

test('streams deltas and usage', async () => {
  const srv = await startOpenAIServer({ respond: () => ['hello world'] });
  try {
    const client = new OpenAI({ baseURL: srv.baseUrl, apiKey: 'x', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'q' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: number | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage.completion_tokens;
    }
    assert.equal(text, 'hello world');
    assert.equal(usage, 3);
  } finally {
    await srv.close();
  }
});

test('scripted faults reach the client as the matching errors', async () => {
  const srv = await startOpenAIServer({ models: ['m'], apiKey: 'k' });
  try {
    const good = new OpenAI({ baseURL: srv.baseUrl, apiKey: 'k', maxRetries: 0 });
    const msgs = [{ role: 'user' as const, content: 'q' }];
    await assert.rejects(new OpenAI({ baseURL: srv.baseUrl, apiKey: 'bad', maxRetries: 0 }).chat.completions.create({ model: 'm', messages: msgs }), OpenAI.AuthenticationError);
    await assert.rejects(good.chat.completions.create({ model: 'nope', messages: msgs }), OpenAI.NotFoundError);
    srv.enqueue({ status: 429 }, { status: 500 }, { drop: true }, { emptyChoices: true }, ['a', 'b']);
    await assert.rejects(good.chat.completions.create({ model: 'm', messages: msgs }), OpenAI.RateLimitError);
    await assert.rejects(good.chat.completions.create({ model: 'm', messages: msgs }), OpenAI.InternalServerError);
    await assert.rejects(good.chat.completions.create({ model: 'm', messages: msgs }), OpenAI.APIConnectionError);
    assert.equal((await good.chat.completions.create({ model: 'm', messages: msgs })).choices.length, 0);
    assert.equal((await good.chat.completions.create({ model: 'm', messages: msgs, n: 5 })).choices.length, 2);
    const models = await good.models.list();
    assert.deepEqual(models.data.map((m) => m.id), ['m']);
    assert.equal(srv.calls, 7);
  } finally {
    await srv.close();
  }
});
