/**
 * The real local model (SmolLM2-135M from the cache, served by `tbrl serve` in a child process)
 * meets the HTTP contract, the action parser and every verifier mode. A 135M model mostly fails
 * the action format: what is asserted is that every answer becomes either actions or an error
 * that quotes the problem and shows a correct example, and that no exception escapes. Bounded:
 * short turns (max_tokens ≤ 48), a handful of samples; the model must be in the cache
 * (scripts/setup.sh puts it there).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startLocalServer, type LocalServer } from '../../src/core/serve/launch';
import { defaultModelPath } from '../../src/core/serve/default-model';
import { ModelClient } from '../../src/core/model/client';
import { MidHarnessVerifier } from '../../src/core/verifier/verifier';
import { parseAgentTurn } from '../../src/core/agent/turn';
import { loadSystemPrompt } from '../../src/core/agent/prompt';
import { synthesize } from '../../src/core/synth/generate';
import { VERIFIER_MODES } from '../../src/core/verifier/types';
import type { ChatMessage } from '../../src/core/model/types';

let server: LocalServer;
const system = loadSystemPrompt().text;
const HELLO = 'Write a Python script /app/wordfreq.py that counts word frequencies in /app/data/input.txt and writes /app/out/counts.json.';
const tev = synthesize({ domain: 'data-eng', tier: 'unit', seed: 3 });
const conversations: Record<string, ChatMessage[]> = {
  'bundled task': [{ role: 'system', content: system }, { role: 'user', content: HELLO }],
  'synthesised Tev task': [{ role: 'system', content: system }, { role: 'user', content: tev.instruction.slice(0, 1200) }],
};
const samples: string[] = [];

before(async () => {
  assert.ok(existsSync(defaultModelPath()), `the local model is not in the cache (${defaultModelPath()}): run \`bash scripts/setup.sh\` (or scripts/fetch-model.sh)`);
  server = await startLocalServer({ sequences: 4, contextSize: 3072 });
});
after(async () => {
  await server?.stop();
});

// The answer's shape is what the test checks, so it is read loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
async function post(body: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Json };
}

test('tbrl serve speaks OpenAI with vLLM\'s token fields, reuses the KV cache and names its errors', { timeout: 240_000 }, async () => {
  const models = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: Array<{ id: string }> };
  assert.deepEqual(models.data.map((m) => m.id), [server.model]);

  const messages = [{ role: 'system', content: 'Answer in one word.' }, { role: 'user', content: 'Name a colour.' }];
  const first = await post({ model: server.model, messages, n: 2, max_tokens: 8, temperature: 1, seed: 7, logprobs: true, top_logprobs: 2, return_token_ids: true });
  assert.equal(first.status, 200, JSON.stringify(first.json));
  assert.ok(Array.isArray(first.json.prompt_token_ids) && first.json.prompt_token_ids.length === first.json.usage.prompt_tokens);
  assert.equal(first.json.choices.length, 2);
  for (const c of first.json.choices) {
    assert.ok(c.token_ids.length >= 1 && c.token_ids.length <= 8);
    assert.equal(c.logprobs.content.length, c.token_ids.length, 'one logprob per sampled token');
    // top_logprobs lists up to 2 alternatives of the sampling distribution (fewer when top-p left fewer).
    for (const t of c.logprobs.content as Array<{ logprob: number; top_logprobs: unknown[] }>) {
      assert.ok(t.logprob <= 0 && t.top_logprobs.length >= 1 && t.top_logprobs.length <= 2, JSON.stringify(t));
    }
    assert.ok(['stop', 'length'].includes(c.finish_reason));
  }
  // Same seed, same answer: sampling is reproducible.
  const again = await post({ model: server.model, messages, n: 1, max_tokens: 8, temperature: 1, seed: 7, return_token_ids: true });
  assert.deepEqual(again.json.choices[0].token_ids, first.json.choices[0].token_ids);
  // The next turn of the conversation reads only its new tokens.
  const next = await post({ model: 'local', messages: [...messages, { role: 'assistant', content: first.json.choices[0].message.content }, { role: 'user', content: 'Another.' }], max_tokens: 4 });
  assert.equal(next.status, 200);
  assert.ok(next.json.usage.prompt_tokens_details.cached_tokens >= first.json.usage.prompt_tokens - 1, `prefix reused: ${JSON.stringify(next.json.usage)}`);

  const unknown = await post({ model: 'gpt-9', messages });
  assert.equal(unknown.status, 404);
  assert.match(unknown.json.error.message, /does not exist.*serves SmolLM2/);
  const overflow = await post({ messages: [{ role: 'user', content: 'word '.repeat(4000) }], max_tokens: 16 });
  assert.equal(overflow.status, 400);
  assert.match(overflow.json.error.message, /prompt has \d+ tokens and max_tokens is 16: \d+ > the context of 3072 tokens/);
  const stream = await post({ messages, stream: true });
  assert.equal(stream.status, 400);
  assert.match(stream.json.error.message, /stream=true is not supported/);
});

test('real model output at temperature 1 always becomes actions or an error that quotes the problem with a correct example', { timeout: 300_000 }, async () => {
  const client = new ModelClient({ baseUrl: server.baseUrl, model: server.model, temperature: 1, maxTokens: 48, logprobs: true });
  for (const [name, messages] of Object.entries(conversations)) {
    const r = await client.sample(messages, 3);
    assert.equal(r.completions.length, 3);
    assert.ok(r.promptTokenIds && r.promptTokenIds.length === r.usage.promptTokens / (r.calls?.length ?? 1), `${name}: prompt ids come back`);
    for (const c of r.completions) {
      samples.push(c.text);
      assert.equal(c.tokenIds?.length, c.logprobs?.length, `${name}: ids and logprobs align`);
      // As the loop reads it: a turn without any action tag is a no-action error item too.
      const turn = parseAgentTurn(c.text);
      assert.ok(turn.items.length >= 1, `${name}: every answer yields an action or an error: ${JSON.stringify(c.text)}`);
      for (const item of turn.items) {
        if (item.ok) continue;
        // An error the agent can act on: what was wrong, and what a correct action looks like.
        assert.ok(item.error.message.length > 20, `${name}: ${JSON.stringify(item.error)}`);
        assert.match(item.error.message, /<(bash|finish|file|search|todo|scratchpad)[\s\S]*<\/\1/, `${name}: the error shows a correct example: ${item.error.message}`);
        if (c.text.trim()) assert.ok(item.error.excerpt.length > 0, `${name}: the error quotes what the model wrote`);
      }
    }
  }
});

test('every verifier mode completes with the real model as verifier; unusable answers are retried once, then the stated fallback', { timeout: 360_000 }, async () => {
  const candidates = ['<bash>\ncmd: ls /app\n</bash>', '<bash>\ncmd: cat /app/data/input.txt\n</bash>', samples[0] ?? 'I will look at the files.'];
  for (const mode of VERIFIER_MODES) {
    const v = new MidHarnessVerifier({ mode, endpoint: { baseUrl: server.baseUrl, model: server.model }, maxOutputTokens: 24 });
    const d = await v.select({ instruction: HELLO, messages: conversations['bundled task'], candidates });
    assert.equal(d.mode, mode);
    assert.ok(d.chosen >= 0 && d.chosen < candidates.length);
    assert.equal(d.scores.length, candidates.length);
    if (d.fallback) {
      assert.match(d.fallback, /took candidate \d+/, `${mode}: the fallback names its pick and reason: ${d.fallback}`);
      assert.ok((d.retries ?? 0) >= 1, `${mode}: a fallback after unusable answers comes after one retry`);
    }
  }
});
