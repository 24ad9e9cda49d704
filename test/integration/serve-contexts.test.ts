/**
 * `tbrl serve` runs N=1 requests on a context of one sequence (llama.cpp generates faster there)
 * and N>1 requests on the shared multi-sequence context. Driven over HTTP by the real `openai`
 * client against the real local model (SmolLM2-135M from the cache): the routing is read from the
 * engine's own account of each request, the answers are checked against the same requests served
 * one at a time, and a conversation's N=1 turns keep their KV prefix whatever runs in between.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import OpenAI from 'openai';
import { LocalEngine, type ChatTurn, type GenerationResult } from '../../src/core/serve/engine';
import { startServer, type RunningServer } from '../../src/core/serve/server';
import { defaultModelPath } from '../../src/core/serve/default-model';

const SEQUENCES = 8;
const system = `You are a terminal agent. ${Array.from({ length: 12 }, (_, i) => `Rule ${i + 1}: check the output of command ${i + 1}.`).join(' ')}`;
const ask = (task: string): ChatTurn[] => [{ role: 'system', content: system }, { role: 'user', content: task }];

let engine: LocalEngine;
let running: RunningServer;
let client: OpenAI;
/** The engine's result of every request, by the last message's text and n. */
const served = new Map<string, GenerationResult[]>();
const key = (messages: ChatTurn[], n: number) => `${messages[messages.length - 1].content}|n=${n}`;
/** Called when the engine starts a request, by key. */
const started = new Map<string, () => void>();

before(async () => {
  assert.ok(existsSync(defaultModelPath()), `the local model is not in the cache (${defaultModelPath()}): run scripts/fetch-model.sh`);
  engine = await LocalEngine.load({ modelPath: defaultModelPath(), threads: 1, sequences: SEQUENCES, contextSize: 1024, prefixCacheDir: false });
  const generate = engine.generate.bind(engine);
  engine.generate = async (messages, o) => {
    // The engine takes its sequences synchronously within this call when they are free.
    const pending = generate(messages, o);
    started.get(key(messages, o.n))?.();
    const r = await pending;
    const k = key(messages, o.n);
    served.set(k, [...(served.get(k) ?? []), r]);
    return r;
  };
  running = await startServer(engine);
  client = new OpenAI({ baseURL: running.baseUrl, apiKey: 'local', maxRetries: 0, timeout: 300_000 });
});
after(async () => {
  await running?.close();
});

interface Answer { texts: string[]; tokenIds: number[][]; cached: number; promptTokens: number; contextSequences: number }

async function chat(messages: ChatTurn[], o: { n: number; temperature: number; seed?: number; maxTokens?: number }): Promise<Answer> {
  const r = await client.chat.completions.create({
    model: 'local', messages, n: o.n, temperature: o.temperature, seed: o.seed, max_tokens: o.maxTokens ?? 8,
    // vLLM's field (not in the openai types): the sampled token ids per choice.
    ...({ return_token_ids: true } as object),
  });
  const results = served.get(key(messages, o.n)) ?? [];
  return {
    texts: r.choices.map((c) => c.message.content ?? ''),
    tokenIds: r.choices.map((c) => (c as unknown as { token_ids: number[] }).token_ids),
    cached: r.usage?.prompt_tokens_details?.cached_tokens ?? -1,
    promptTokens: r.usage?.prompt_tokens ?? -1,
    contextSequences: results[results.length - 1]?.contextSequences ?? -1,
  };
}

test('N=1 turns run on the 1-sequence context and reuse their prefix; N=8 runs on the shared context; another conversation does not evict the first', { timeout: 600_000 }, async () => {
  assert.ok(engine.hasSoloContext);
  const conversation = ask('List the files in /app.');
  const turn1 = await chat(conversation, { n: 1, temperature: 1, seed: 3 });
  assert.equal(turn1.contextSequences, 1, 'an N=1 request on an idle server runs on the 1-sequence context');
  conversation.push({ role: 'assistant', content: turn1.texts[0] }, { role: 'user', content: '<bash_output>\nexit code 0\n</bash_output>' });
  const turn2 = await chat(conversation, { n: 1, temperature: 1, seed: 4 });
  assert.equal(turn2.contextSequences, 1);
  assert.ok(turn2.cached >= turn1.promptTokens - 1, `turn 2 reuses turn 1's prompt: cached ${turn2.cached} of ${turn2.promptTokens}, turn 1 had ${turn1.promptTokens}`);

  // Another conversation's N=1 request (a verifier's: its own system prompt) takes a shared
  // sequence nobody needs rather than the 1-sequence context that holds the first conversation.
  const other = await chat([{ role: 'system', content: 'You judge which answer is best. Reply with its number.' }, { role: 'user', content: 'Answer 1: ls. Answer 2: pwd.' }], { n: 1, temperature: 1, seed: 5 });
  assert.equal(other.contextSequences, SEQUENCES, 'an N=1 request with nothing cached does not evict the conversation of the 1-sequence context while an unused sequence is free');

  // N=8 candidates of a third conversation: the shared context, all eight sequences.
  const candidates = await chat(ask('Count the lines of /app/data/input.txt.'), { n: SEQUENCES, temperature: 1, seed: 9 });
  assert.equal(candidates.contextSequences, SEQUENCES);
  assert.equal(candidates.texts.length, SEQUENCES);

  conversation.push({ role: 'assistant', content: turn2.texts[0] }, { role: 'user', content: '<bash_output>\nexit code 1\n</bash_output>' });
  const turn3 = await chat(conversation, { n: 1, temperature: 1, seed: 6 });
  assert.equal(turn3.contextSequences, 1);
  assert.ok(turn3.cached >= turn2.promptTokens - 1, `turn 3 still reuses turn 2's prompt after N=8 and another conversation ran: cached ${turn3.cached}, turn 2 had ${turn2.promptTokens}`);

  // A conversation whose last turn was N=8 continues with N=1 from the sequence that holds it.
  const followUp = [...ask('Count the lines of /app/data/input.txt.'), { role: 'assistant' as const, content: candidates.texts[0] }, { role: 'user' as const, content: 'Go on.' }];
  const next = await chat(followUp, { n: 1, temperature: 1, seed: 7 });
  assert.ok(next.cached >= candidates.promptTokens - 1, `the N=1 turn after an N=8 turn reuses its prompt: cached ${next.cached}, the N=8 prompt had ${candidates.promptTokens}`);
});

test('N=1 and N=8 requests at the same time each answer exactly what they answer alone', { timeout: 600_000 }, async () => {
  // Greedy answers, so that what is compared is the tokens a request's own prompt leads to, not the
  // last bits of the floats (llama.cpp's sums differ slightly with the batch a token is decoded in).
  // A request that read another's KV cache, or had its sequence taken, answers something else.
  const singles = ['Show the disk usage of /app.', 'Find every .py file under /app.', 'Print the first line of /app/README.md.'].map(ask);
  const eight = ask('Make the directory /app/out and list it.');
  const alone: Answer[] = [];
  for (const m of singles) alone.push(await chat(m, { n: 1, temperature: 0 }));
  const eightAlone = await chat(eight, { n: 1, temperature: 0 });
  assert.ok([...alone, eightAlone].every((a) => a.tokenIds[0].length >= 1), 'every answer has tokens');
  assert.equal(new Set([...alone, eightAlone].map((a) => a.texts[0])).size, 4, 'the four prompts have four different answers, so a mix-up shows');

  for (let round = 0; round < 2; round++) {
    const [together8, ...together1] = await Promise.all([
      chat(eight, { n: SEQUENCES, temperature: 0 }),
      ...singles.map((m) => chat(m, { n: 1, temperature: 0 })),
    ]);
    assert.deepEqual(together8.tokenIds, Array(SEQUENCES).fill(eightAlone.tokenIds[0]), `round ${round}: each of the N=8 answers is the one the prompt gives alone`);
    assert.equal(together8.contextSequences, SEQUENCES);
    together1.forEach((a, i) => assert.deepEqual(a.tokenIds, alone[i].tokenIds, `round ${round}: N=1 request ${i} answers what it answers alone (served on the ${a.contextSequences}-sequence context)`));
    // Three N=1 requests at once: one fits the 1-sequence context, the others ran on shared ones or queued.
    assert.ok(together1.every((a) => a.contextSequences === 1 || a.contextSequences === SEQUENCES));
  }
});

test('while the shared context decodes, an N=1 request joins it rather than decode on the 1-sequence context beside it', { timeout: 600_000 }, async () => {
  // A long N=2 request keeps the shared context busy; an N=1 request sent meanwhile must not start
  // a second set of llama.cpp threads on the 1-sequence context.
  const longAsk = ask('Explain in detail how to back up /app.');
  const begun = new Promise<void>((resolve) => started.set(key(longAsk, 2), resolve));
  const long = chat(longAsk, { n: 2, temperature: 1, seed: 31, maxTokens: 48 });
  await begun;
  const single = await chat([{ role: 'system', content: 'Answer in one word.' }, { role: 'user', content: 'Name a colour.' }], { n: 1, temperature: 1, seed: 32 });
  const both = await long;
  assert.equal(both.contextSequences, SEQUENCES);
  assert.equal(single.contextSequences, SEQUENCES, 'the N=1 request ran on a shared sequence, batched with the running request');
});
