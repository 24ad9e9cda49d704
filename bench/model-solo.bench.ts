// #18: `tbrl serve` N=1 generation over HTTP with N=1 requests on a 1-sequence context of their own
// (the default) vs on the shared 8-sequence context (`soloContext: false`, the server before), both
// against node-llama-cpp in-process on a 1-sequence context: two servers and the baseline in one
// process, alternated every round on the same prompt and seed, so the other sessions' load hits all
// three alike. Prints each one's median tokens/s and the median of its per-round ratios to the baseline.
//
// Run: node --import tsx bench/model-solo.bench.ts   (BENCH_ROUNDS=12, BENCH_TOKENS=32, BENCH_THREADS=2;
//      BENCH_DIRECT=1 adds each engine called in-process, without HTTP)
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalEngine } from '../src/core/serve/engine';
import { startServer, type RunningServer } from '../src/core/serve/server';
import { defaultModelPath } from '../src/core/serve/default-model';
import { loadSystemPrompt } from '../src/core/agent/prompt';
import { inProcessTokensPerSecond, post } from './llama-generate';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const DIRECT = process.env.BENCH_DIRECT === '1';
const modelPath = process.env.BENCH_MODEL ?? defaultModelPath();
const messages = [{ role: 'system' as const, content: loadSystemPrompt().text }, { role: 'user' as const, content: 'Write a Python script /app/wordfreq.py that counts word frequencies in /app/data/input.txt.' }];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () => loadavg()[0].toFixed(2);

async function main(): Promise<void> {
  const kvDir = await mkdtemp(join(tmpdir(), 'tbrl-bench-kv-'));
  const servers: Array<{ name: string; engine: LocalEngine; running: RunningServer }> = [];
  try {
    for (const soloContext of [true, false]) {
      const engine = await LocalEngine.load({ modelPath, threads: THREADS, sequences: 8, contextSize: 4096, prefixCacheDir: kvDir, soloContext });
      const running = await startServer(engine);
      servers.push({ name: soloContext ? 'N=1 on its own 1-sequence context' : 'N=1 on the 8-sequence context', engine, running });
      // Reads the prompt (the second server: from the disk cache only if the shape matches).
      await post(`${running.baseUrl}/chat/completions`, JSON.stringify({ messages, n: 1, max_tokens: 1, temperature: 0.8, seed: 1 }));
    }
    const lib = await import('node-llama-cpp');
    const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: THREADS, logLevel: lib.LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath });
    const ctx = await model.createContext({ contextSize: 4096, sequences: 1, threads: THREADS, batchSize: 512 });
    try {
      const seq = ctx.getSequence();
      const prompt = servers[0].engine.promptTokens(messages);
      await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as never);
      console.log(`${modelPath.split('/').pop()}, prompt ${prompt.length} tokens, ${TOKENS} generated, ${THREADS} thread(s), ${ROUNDS} rounds alternated; load average ${load()}`);
      const base: number[] = [];
      const served = servers.map(() => [] as number[]);
      const direct = servers.map(() => [] as number[]);
      for (let i = 0; i < ROUNDS; i++) {
        const seed = 100 + i;
        base.push(await inProcessTokensPerSecond(seq, prompt as never, TOKENS, seed));
        // The two servers' order alternates too.
        for (const k of i % 2 ? [1, 0] : [0, 1]) {
          let t = performance.now();
          const body = JSON.stringify({ messages, n: 1, max_tokens: TOKENS, temperature: 0.8, seed, stop: ['\u0000'], return_token_ids: true });
          const json = JSON.parse(await post(`${servers[k].running.baseUrl}/chat/completions`, body)) as { choices: Array<{ token_ids: number[] }> };
          served[k].push(json.choices[0].token_ids.length / ((performance.now() - t) / 1000));
          if (!DIRECT) continue;
          t = performance.now();
          const r = await servers[k].engine.generate(messages, { n: 1, temperature: 0.8, maxTokens: TOKENS, stop: ['\u0000'], seed, topLogprobs: 0 });
          direct[k].push(r.choices[0].tokens.length / ((performance.now() - t) / 1000));
        }
      }
      const line = (name: string, xs: number[]) => console.log(`${name}: median ${median(xs).toFixed(1)} tok/s, ${median(xs.map((x, i) => x / base[i])).toFixed(2)}x in-process (rounds ${xs.map((x, i) => (x / base[i]).toFixed(2)).join(' ')})`);
      console.log(`in-process (1-sequence context): median ${median(base).toFixed(1)} tok/s`);
      servers.forEach((s, k) => {
        line(`tbrl serve, ${s.name}`, served[k]);
        if (DIRECT) line(`  the same engine in-process, no HTTP`, direct[k]);
      });
      console.log(`load average now ${load()}`);
    } finally {
      await ctx.dispose();
      await model.dispose();
      await llama.dispose();
    }
  } finally {
    for (const s of servers) await s.running.close();
    await rm(kvDir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
