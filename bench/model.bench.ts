// The local model server (`tbrl serve`, SmolLM2-135M Q4_1 on the CPU) against node-llama-cpp used
// directly in-process, on the same prompt and threads:
//   1. generation tokens/s over HTTP vs in-process (target ≥ 0.9x), and prompt-processing tokens/s;
//   2. per-turn latency over a 20-turn conversation with and without KV prefix reuse
//      (target: with reuse, turn 20 ≤ 1.5x turn 1);
//   3. N=8 candidates vs N=1 on one turn (target ≤ 3x);
//   4. a new server's first turn with the on-disk prefix cache vs reading the prompt.
// Run: node --import tsx bench/model.bench.ts   (BENCH_TURNS=20, BENCH_TOKENS=32 to change the sizes;
// BENCH_PARTS=2 runs only part 2, BENCH_BASELINE_TURNS caps the slow no-reuse baseline, whose turn k
// re-reads the whole prompt: at 40 prompt tok/s under load, 20 turns take 15 minutes)
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalEngine, defaultThreads } from '../src/core/serve/engine';
import { startServer } from '../src/core/serve/server';
import { defaultModelPath } from '../src/core/serve/default-model';
import { loadSystemPrompt } from '../src/core/agent/prompt';

const TURNS = Number(process.env.BENCH_TURNS ?? 20);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
const PARTS = new Set((process.env.BENCH_PARTS ?? '1,2,3,4').split(','));
const BASELINE_TURNS = Number(process.env.BENCH_BASELINE_TURNS ?? TURNS);
const modelPath = defaultModelPath();
const threads = Number(process.env.BENCH_THREADS ?? defaultThreads());
const system = loadSystemPrompt().text;
const instruction = 'Write a Python script /app/wordfreq.py that counts word frequencies in /app/data/input.txt.';
const fmt = (x: number) => x.toFixed(1);

async function inProcess(prompt: number[]): Promise<{ genTps: number; ppTps: number }> {
  // The baseline: node-llama-cpp's own sequence API, no server, no sampling metadata.
  const lib = await import('node-llama-cpp');
  const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: lib.LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const ctx = await model.createContext({ contextSize: 4096, sequences: 1, threads, batchSize: 512 });
  const seq = ctx.getSequence();
  let t = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as never);
  const ppTps = (prompt.length - 1) / ((performance.now() - t) / 1000);
  t = performance.now();
  let n = 0;
  for await (const tok of seq.evaluate(prompt.slice(-1) as never, { temperature: 0.8, seed: 1 })) {
    void tok;
    if (++n >= TOKENS) break;
  }
  const genTps = n / ((performance.now() - t) / 1000);
  await ctx.dispose();
  await model.dispose();
  await llama.dispose();
  return { genTps, ppTps };
}

async function main() {
  console.log(`model ${modelPath}, ${threads} thread(s), ${TOKENS} tokens per answer`);
  const messages = [{ role: 'system' as const, content: system }, { role: 'user' as const, content: instruction }];

  if (PARTS.has('1') || PARTS.has('3')) await serverParts(messages);
  if (PARTS.has('2')) await conversation(messages);
  if (PARTS.has('4')) await diskCache(messages);
}

async function diskCache(messages: Msg[]) {
  // 4. A new server on the same first prompt (every run starts one): read vs loaded from the disk cache.
  const dir = await mkdtemp(join(tmpdir(), 'tbrl-bench-kv-'));
  const times: number[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const e = await LocalEngine.load({ modelPath, threads, sequences: 4, contextSize: 4096, prefixCacheDir: dir });
      const t = performance.now();
      const r = await e.generate(messages, { n: 1, temperature: 0.8, maxTokens: 8, stop: [], seed: 1, topLogprobs: 0 });
      times.push(performance.now() - t);
      console.log(`4. new server #${i + 1}: first turn ${fmt(times[i])} ms (${r.promptTokensEvaluated} prompt tokens read, ${r.promptTokensFromDisk ?? 0} from the disk cache)`);
      await e.dispose();
    }
    console.log(`   disk prefix cache: first turn ${(times[0] / times[1]).toFixed(1)}x faster`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Msg = { role: 'system' | 'user' | 'assistant'; content: string };

async function serverParts(messages: Msg[]) {
  // 1. HTTP server vs in-process.
  // No disk prefix cache here: the first request must read its prompt (part 4 measures the cache).
  const engine = await LocalEngine.load({ modelPath, threads, sequences: 8, contextSize: 4096, prefixCacheDir: false });
  const prompt = engine.promptTokens(messages);
  const running = await startServer(engine, { port: Number(process.env.TBRL_SERVE_PORT ?? 0) });
  const body = (m: unknown, n = 1) => JSON.stringify({ messages: m, n, max_tokens: TOKENS, temperature: 0.8, seed: 1, stop: ['\u0000'] });
  const call = async (m: unknown, n = 1) => {
    const t = performance.now();
    // node:http, not fetch: fetch gives up on a response that takes over 300 s (N=8 under load).
    const json = JSON.parse(await post(`${running.baseUrl}/chat/completions`, body(m, n))) as { usage: { completion_tokens: number } };
    return { ms: performance.now() - t, tokens: json.usage.completion_tokens };
  };
  const t = performance.now();
  await call(messages); // reads the prompt once (prompt processing, measured below in-process as well)
  const servePp = (prompt.length - 1) / ((performance.now() - t) / 1000);
  const warm = await call(messages); // prompt cached: generation only
  const serveTps = warm.tokens / (warm.ms / 1000);
  const base = await inProcess(prompt);
  console.log(`1. generation: tbrl serve ${fmt(serveTps)} tok/s vs in-process node-llama-cpp ${fmt(base.genTps)} tok/s -> ${(serveTps / base.genTps).toFixed(2)}x (target >= 0.9x)`);
  console.log(`   prompt processing (${prompt.length} tokens): in-process ${fmt(base.ppTps)} tok/s; first served request ${fmt(servePp)} tok/s (incl. ${TOKENS} generated)`);

  // 3. N=8 vs N=1 on one turn (prompt cached for both).
  const one = await call(messages, 1);
  const eight = await call(messages, 8);
  console.log(`3. one turn: N=1 ${fmt(one.ms)} ms, N=8 ${fmt(eight.ms)} ms -> ${(eight.ms / one.ms).toFixed(2)}x (target <= 3x)`);
  await running.close();
}

async function conversation(messages: Msg[]) {
  // 2. A conversation that grows every turn, with and without prefix reuse.
  for (const reuse of [true, false]) {
    const e = await LocalEngine.load({ modelPath, threads, sequences: 1, contextSize: 4096, reusePrefix: reuse, prefixCacheDir: false });
    const conv: Array<{ role: 'system' | 'user' | 'assistant'; content: string }> = [...messages];
    const times: number[] = [];
    const prompts: number[] = [];
    const evaluated: number[] = [];
    const turns = reuse ? TURNS : Math.min(TURNS, BASELINE_TURNS);
    for (let turn = 1; turn <= turns; turn++) {
      const t0 = performance.now();
      const r = await e.generate(conv, { n: 1, temperature: 0.8, maxTokens: 8, stop: [], seed: turn, topLogprobs: 0 });
      times.push(performance.now() - t0);
      prompts.push(r.promptTokenIds.length);
      evaluated.push(r.promptTokensEvaluated);
      conv.push({ role: 'assistant', content: r.choices[0].text }, { role: 'user', content: `<bash_output>\nexit code 0\nline ${turn}: wordfreq counts ${turn * 7} words\n</bash_output>` });
    }
    await e.dispose();
    const last = times[times.length - 1];
    // Turn 1 reads the system prompt in both runs; turn 2 is the first that can reuse it.
    const k = times.length;
    console.log(`2. ${k}-turn conversation ${reuse ? 'with' : 'without'} prefix reuse: turn 1 ${fmt(times[0])} ms, turn 2 ${fmt(times[1])} ms, turn ${k} ${fmt(last)} ms (prompt ${prompts[k - 1]} tokens, ${evaluated[k - 1]} evaluated) -> turn ${k}/turn 1 ${(last / times[0]).toFixed(2)}x, turn ${k}/turn 2 ${(last / times[1]).toFixed(2)}x; total ${fmt(times.reduce((a, b) => a + b, 0) / 1000)} s`);
    console.log(`   per turn (ms): ${times.map((x) => x.toFixed(0)).join(' ')}`);
  }
}

function post(url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
