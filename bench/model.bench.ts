// The local model server (`tbrl serve`, SmolLM2-135M Q4_1 on the CPU) against node-llama-cpp used
// directly in-process, on the same prompt and threads:
//   1. generation tokens/s over HTTP vs in-process (target ≥ 0.9x), and prompt-processing tokens/s;
//   2. per-turn latency over a 20-turn conversation with and without KV prefix reuse
//      (target: with reuse, turn 20 ≤ 1.5x turn 1);
//   3. N=8 candidates vs N=1 on one turn (target ≤ 3x).
// Run: node --import tsx bench/model.bench.ts   (BENCH_TURNS=20, BENCH_TOKENS=32 to change the sizes)
import { performance } from 'node:perf_hooks';
import { LocalEngine, defaultThreads } from '../src/core/serve/engine';
import { startServer } from '../src/core/serve/server';
import { defaultModelPath } from '../src/core/serve/default-model';
import { loadSystemPrompt } from '../src/core/agent/prompt';

const TURNS = Number(process.env.BENCH_TURNS ?? 20);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
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

  // 1. HTTP server vs in-process.
  const engine = await LocalEngine.load({ modelPath, threads, sequences: 8, contextSize: 4096 });
  const prompt = engine.promptTokens(messages);
  const running = await startServer(engine, { port: Number(process.env.TBRL_SERVE_PORT ?? 0) });
  const body = (m: unknown, n = 1) => JSON.stringify({ messages: m, n, max_tokens: TOKENS, temperature: 0.8, seed: 1, stop: ['\u0000'] });
  const call = async (m: unknown, n = 1) => {
    const t = performance.now();
    const res = await fetch(`${running.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(m, n) });
    const json = (await res.json()) as { usage: { completion_tokens: number } };
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

  // 2. A conversation that grows every turn, with and without prefix reuse.
  for (const reuse of [true, false]) {
    const e = await LocalEngine.load({ modelPath, threads, sequences: 1, contextSize: 4096, reusePrefix: reuse });
    const conv: Array<{ role: 'system' | 'user' | 'assistant'; content: string }> = [...messages];
    const times: number[] = [];
    for (let turn = 1; turn <= TURNS; turn++) {
      const t0 = performance.now();
      const r = await e.generate(conv, { n: 1, temperature: 0.8, maxTokens: 8, stop: [], seed: turn, topLogprobs: 0 });
      times.push(performance.now() - t0);
      conv.push({ role: 'assistant', content: r.choices[0].text }, { role: 'user', content: `<bash_output>\nexit code 0\nline ${turn}: wordfreq counts ${turn * 7} words\n</bash_output>` });
    }
    await e.dispose();
    const last = times[times.length - 1];
    // Turn 1 reads the system prompt in both runs; turn 2 is the first that can reuse it.
    console.log(`2. ${TURNS}-turn conversation ${reuse ? 'with' : 'without'} prefix reuse: turn 1 ${fmt(times[0])} ms, turn 2 ${fmt(times[1])} ms, turn ${TURNS} ${fmt(last)} ms -> turn ${TURNS}/turn 1 ${(last / times[0]).toFixed(2)}x, turn ${TURNS}/turn 2 ${(last / times[1]).toFixed(2)}x; total ${fmt(times.reduce((a, b) => a + b, 0) / 1000)} s`);
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
