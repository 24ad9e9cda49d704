// The local model server (`tbrl serve`, SmolLM2-135M Q4_1 on the CPU) against node-llama-cpp used
// directly in-process, on the same prompt and threads:
//   1. generation tokens/s over HTTP vs in-process (target ≥ 0.9x), and prompt-processing tokens/s;
//   2. per-turn latency over a 20-turn conversation with and without KV prefix reuse
//      (target: with reuse, turn 20 ≤ 1.5x turn 1);
//   3. N=8 candidates vs N=1 on one turn (target ≤ 3x);
//   4. a new server's first turn with the on-disk prefix cache vs reading the prompt.
// Run: node --import tsx bench/model.bench.ts   (BENCH_TURNS=20, BENCH_TOKENS=32 to change the sizes;
// BENCH_PARTS=2 runs only part 2, BENCH_BASELINE_TURNS caps the slow no-reuse baseline, whose turn k
// re-reads the whole prompt: at 40 prompt tok/s under load, 20 turns take 15 minutes).
// Parts 1 and 3 run once per thread count of BENCH_THREADS (default 1,2), back to back in one process:
// part 1 alternates BENCH_SAMPLES (5) served and in-process generations and reports the median of the
// pair ratios; part 3 alternates BENCH_ROUNDS (3) N=1 / N=8 requests and splits the N=8 cost into the
// batched step vs a single step and the longest sample vs the N=1 length, with CPU time next to wall
// time (CPU time barely moves with the load of the other sessions on the 2 cores; wall time does),
// then the raw decode of the same steps without sampling (BENCH_RAW_STEP=0 skips it).
// BENCH_MODEL=a.gguf,b.gguf runs parts 1 and 3 per file (scripts/derive-model.mjs makes Q8_0/Q4_0 copies).
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalEngine, defaultThreads, type GenerationTimings } from '../src/core/serve/engine';
import { startServer } from '../src/core/serve/server';
import { defaultModelPath } from '../src/core/serve/default-model';
import { loadSystemPrompt } from '../src/core/agent/prompt';
import { inProcessTokensPerSecond, post } from './llama-generate';

const TURNS = Number(process.env.BENCH_TURNS ?? 20);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
const PARTS = new Set((process.env.BENCH_PARTS ?? '1,2,3,4').split(','));
const BASELINE_TURNS = Number(process.env.BENCH_BASELINE_TURNS ?? TURNS);
// BENCH_MODEL: a GGUF file, or several comma-separated (parts 1 and 3 then run once per file, back to
// back in one process, to compare weight layouts); default: the default model.
const modelPaths = (process.env.BENCH_MODEL || defaultModelPath()).split(',');
let modelPath = modelPaths[0];
// Parts 1 and 3 run once per BENCH_THREADS entry (default 1,2); parts 2 and 4 use the first.
const threads = Number((process.env.BENCH_THREADS ?? String(defaultThreads())).split(',')[0]);
const system = loadSystemPrompt().text;
const instruction = 'Write a Python script /app/wordfreq.py that counts word frequencies in /app/data/input.txt.';
const fmt = (x: number) => x.toFixed(1);

async function main() {
  console.log(`model ${modelPath}, ${TOKENS} tokens per answer; parts 2 and 4 use ${threads} thread(s); load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
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
type Reply = { ms: number; cpuMs: number; lengths: number[]; timings?: GenerationTimings };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cpuNow = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };

/**
 * node-llama-cpp's own sequence API in the same process, no server, no sampling metadata: the
 * baseline of part 1. The prompt is read once; every sample rewinds to it.
 */
async function inProcessBaseline(prompt: number[], threads: number) {
  const lib = await import('node-llama-cpp');
  const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: lib.LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const ctx = await model.createContext({ contextSize: 4096, sequences: 1, threads, batchSize: 512 });
  const seq = ctx.getSequence();
  const t = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as never);
  const ppTps = (prompt.length - 1) / ((performance.now() - t) / 1000);
  return {
    ppTps,
    generate: (seed: number): Promise<number> => inProcessTokensPerSecond(seq, prompt as never, TOKENS, seed),
    async dispose() {
      await ctx.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/**
 * Raw decode cost at the served prompt's length: one token on one sequence vs one token on each of
 * 8 sequences (each holding the prompt, copied by state file as the engine does), no logits, no
 * sampling, alternated. Splits part 3's step cost into llama.cpp's decode and everything around it.
 */
async function rawStepProbe(prompt: number[], threads: number, n: number): Promise<{ one: number; eight: number; n: number }> {
  const lib = await import('node-llama-cpp');
  const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: lib.LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const ctx = await model.createContext({ contextSize: 4096, sequences: 8, threads, batchSize: 512 });
  const dir = await mkdtemp(join(tmpdir(), 'tbrl-bench-raw-'));
  try {
    const seqs = Array.from({ length: 8 }, () => ctx.getSequence());
    await seqs[0].evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as never);
    await seqs[0].saveStateToFile(join(dir, 'p.bin'));
    for (const s of seqs.slice(1)) await s.loadStateFromFile(join(dir, 'p.bin'), { acceptRisk: true });
    const tok = prompt[prompt.length - 1];
    const one: number[] = [];
    const eight: number[] = [];
    for (let i = 0; i < n; i++) {
      let t = performance.now();
      await seqs[0].evaluateWithoutGeneratingNewTokens([tok] as never);
      one.push(performance.now() - t);
      t = performance.now();
      await Promise.all(seqs.map((s) => s.evaluateWithoutGeneratingNewTokens([tok] as never)));
      eight.push(performance.now() - t);
    }
    return { one: median(one), eight: median(eight), n };
  } finally {
    await ctx.dispose();
    await model.dispose();
    await llama.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Diagnostic only (node-llama-cpp internals, absent => not shown): the sizes of the batches the
 * context decodes, to tell one batched step of all candidates from split steps.
 */
function watchDecodes(engine: LocalEngine): { take(): Map<number, number> } {
  const sizes = new Map<number, number>();
  const addon = (engine as unknown as { context?: { _ctx?: Record<string, unknown> } }).context?._ctx;
  if (!addon || typeof addon.initBatch !== 'function' || typeof addon.decodeBatch !== 'function') return { take: () => new Map() };
  const init = (addon.initBatch as (n: number) => void).bind(addon);
  let pending = 0;
  Object.defineProperty(addon, 'initBatch', { configurable: true, writable: true, value: (n: number) => { pending = n; return init(n); } });
  const decode = (addon.decodeBatch as () => Promise<void>).bind(addon);
  Object.defineProperty(addon, 'decodeBatch', { configurable: true, writable: true, value: async () => { sizes.set(pending, (sizes.get(pending) ?? 0) + 1); return decode(); } });
  return { take: () => { const copy = new Map(sizes); sizes.clear(); return copy; } };
}

const batches = (m: Map<number, number>) => [...m.entries()].sort((a, b) => b[0] - a[0]).map(([size, k]) => `${k}x${size}`).join(' + ') || 'n/a';

async function serverParts(messages: Msg[]) {
  // Parts 1 and 3 for each thread count, back to back in one process (BENCH_THREADS=1,2).
  const threadCounts = (process.env.BENCH_THREADS ?? '1,2').split(',').map(Number);
  const samples = Number(process.env.BENCH_SAMPLES ?? 5);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  // The first server reads the prompt and saves it here; the next ones load it (part 4 measures that).
  const kvDir = await mkdtemp(join(tmpdir(), 'tbrl-bench-kv-'));
  try {
    for (const threads of threadCounts) {
      for (const path of modelPaths) {
        modelPath = path;
        await serverPartsWith(messages, threads, samples, rounds, kvDir);
      }
    }
    modelPath = modelPaths[0];
  } finally {
    await rm(kvDir, { recursive: true, force: true });
  }
}

async function serverPartsWith(messages: Msg[], threads: number, samples: number, rounds: number, kvDir: string) {
  // BENCH_SOLO_CONTEXT=0: N=1 requests share the 8-sequence context too (the server before #18's 1-sequence context).
  const soloContext = process.env.BENCH_SOLO_CONTEXT !== '0';
  const engine = await LocalEngine.load({ modelPath, threads, sequences: 8, contextSize: 4096, prefixCacheDir: kvDir, soloContext });
  console.log(`-- ${threads} thread(s), ${basename(modelPath)} (${engine.weightsDescription}), N=1 requests on ${engine.hasSoloContext ? 'a 1-sequence context of their own' : 'the 8-sequence context'}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const decodes = watchDecodes(engine);
  const prompt = engine.promptTokens(messages);
  const running = await startServer(engine, { port: Number(process.env.TBRL_SERVE_PORT ?? 0) });
  const call = async (n: number, seed = 1): Promise<Reply> => {
    const t = performance.now();
    const c = cpuNow();
    // node:http, not fetch: fetch gives up on a response that takes over 300 s (N=8 under load).
    const body = JSON.stringify({ messages, n, max_tokens: TOKENS, temperature: 0.8, seed, stop: ['\u0000'], return_token_ids: true });
    const json = JSON.parse(await post(`${running.baseUrl}/chat/completions`, body)) as { choices: Array<{ token_ids: number[] }> };
    return { ms: performance.now() - t, cpuMs: cpuNow() - c, lengths: json.choices.map((x) => x.token_ids.length), timings: lastTimings };
  };
  // The engine's own account of the last request (the server does not return it).
  let lastTimings: GenerationTimings | undefined;
  let lastFromDisk: number | undefined;
  const generate = engine.generate.bind(engine);
  engine.generate = async (m, o) => { const r = await generate(m, o); lastTimings = r.timings; lastFromDisk = r.promptTokensFromDisk; return r; };
  try {
    const t = performance.now();
    const first = await call(1); // reads the prompt (or loads it from the disk cache)
    const base = await inProcessBaseline(prompt, threads);
    const readOrLoaded = lastFromDisk ? `loaded ${lastFromDisk} tokens from the disk prefix cache in ${fmt(lastTimings?.promptMs ?? NaN)} ms`
      : `${fmt((prompt.length - 1) / ((lastTimings?.promptMs ?? NaN) / 1000))} tok/s (first request ${fmt(first.ms)} ms, its prompt ${fmt(lastTimings?.promptMs ?? NaN)} ms)`;
    console.log(`   prompt processing (${prompt.length} tokens): in-process ${fmt(base.ppTps)} tok/s; tbrl serve ${readOrLoaded} (${((performance.now() - t) / 1000).toFixed(1)} s with the baseline's read)`);

    // 1. Generation, served vs in-process: alternate, median of the per-pair ratios.
    const served: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < samples; i++) {
      const r = await call(1, 100 + i);
      served.push(r.lengths[0] / (r.ms / 1000));
      direct.push(await base.generate(100 + i));
    }
    await base.dispose();
    const pairs = served.map((x, i) => x / direct[i]);
    console.log(`1. generation (${TOKENS} tokens, ${samples} pairs): tbrl serve median ${fmt(median(served))} tok/s vs in-process ${fmt(median(direct))} tok/s -> median ratio ${median(pairs).toFixed(2)}x (range ${Math.min(...pairs).toFixed(2)}-${Math.max(...pairs).toFixed(2)}; target >= 0.9x)`);

    // 3. N=8 vs N=1 on one turn, same max_tokens, prompt cached. The first N=8 also copies the prompt to the 7 other sequences
    // (and, when the N=1 requests ran on their own 1-sequence context, first reads it or loads it from the disk cache).
    decodes.take();
    const copyRun = await call(8, 1);
    console.log(`3. first N=8 of the turn: ${fmt(copyRun.ms)} ms, of which the prompt on the first sequence ${fmt(copyRun.timings?.promptMs ?? NaN)} ms${lastFromDisk ? ` (${lastFromDisk} tokens from the disk cache)` : ''} and its state copied to 7 sequences ${fmt(copyRun.timings?.copyMs ?? NaN)} ms; decodes ${batches(decodes.take())}`);
    const ones: Reply[] = [];
    const eights: Reply[] = [];
    const eightDecodes: string[] = [];
    for (let i = 0; i < rounds; i++) {
      ones.push(await call(1, 200 + i));
      decodes.take();
      eights.push(await call(8, 200 + i));
      eightDecodes.push(batches(decodes.take()));
    }
    const wall1 = median(ones.map((r) => r.ms));
    const wall8 = median(eights.map((r) => r.ms));
    const cpu1 = median(ones.map((r) => r.cpuMs));
    const cpu8 = median(eights.map((r) => r.cpuMs));
    const len1 = median(ones.map((r) => r.lengths[0]));
    const all8 = eights.flatMap((r) => r.lengths);
    const max8 = median(eights.map((r) => Math.max(...r.lengths)));
    const gen1 = median(ones.map((r) => r.timings!.generateMs));
    const gen8 = median(eights.map((r) => r.timings!.generateMs));
    const perToken1 = gen1 / len1;
    const perStep8 = gen8 / max8;
    console.log(`   N=1 ${fmt(wall1)} ms (cpu ${fmt(cpu1)} ms), ${len1} tokens: ${fmt(perToken1)} ms per token`);
    console.log(`   N=8 ${fmt(wall8)} ms (cpu ${fmt(cpu8)} ms), lengths mean ${fmt(all8.reduce((a, b) => a + b, 0) / all8.length)} max ${max8}: ${fmt(perStep8)} ms per batched step of up to 8 tokens (${fmt(gen8 / (all8.length ? all8.reduce((a, b) => a + b, 0) / rounds : 1))} ms per token); decodes ${eightDecodes.join(' | ')}`);
    console.log(`   N=8 / N=1: wall ${(wall8 / wall1).toFixed(2)}x (target <= 3x), cpu ${(cpu8 / cpu1).toFixed(2)}x = batched step vs single step ${(perStep8 / perToken1).toFixed(2)}x x longest sample vs N=1 length ${(max8 / len1).toFixed(2)}x (medians of ${rounds} back-to-back pairs; load average now ${loadavg()[0].toFixed(2)})`);
    if (process.env.BENCH_RAW_STEP !== '0') {
      // The same steps without sampling, logprobs, the lockstep or HTTP: what is left is llama.cpp's decode.
      const raw = await rawStepProbe(prompt, threads, Math.max(5, rounds * 3));
      console.log(`   raw llama_decode at the same prompt (no logits, no sampling; median of ${raw.n} alternated pairs): 1 token ${fmt(raw.one)} ms, 8 sequences x 1 token ${fmt(raw.eight)} ms -> ${(raw.eight / raw.one).toFixed(2)}x; the served steps above cost ${fmt(perToken1)} / ${fmt(perStep8)} ms, so ${fmt(perToken1 - raw.one)} / ${fmt(perStep8 - raw.eight)} ms per step are logits, sampling and our code`);
    }
  } finally {
    await running.close();
  }
  if (process.env.BENCH_LOCKSTEP_BASELINE === '0') return;
  // The same N=8 without the lockstep (node-llama-cpp's own dispatch), for the split-batch cost.
  const loose = await LocalEngine.load({ modelPath, threads, sequences: 8, contextSize: 4096, prefixCacheDir: kvDir, lockstep: false });
  const looseDecodes = watchDecodes(loose);
  try {
    const ask = (n: number, seed: number) => loose.generate(messages, { n, temperature: 0.8, maxTokens: TOKENS, stop: ['\u0000'], seed, topLogprobs: 0 });
    await ask(8, 1); // prompt from the disk cache, copied to the 8 sequences
    const walls: number[] = [];
    const seen: string[] = [];
    for (let i = 0; i < rounds; i++) {
      looseDecodes.take();
      const r = await ask(8, 200 + i);
      walls.push(r.timings.generateMs);
      seen.push(batches(looseDecodes.take()));
    }
    console.log(`   without lockstep (engine in-process): N=8 generation ${fmt(median(walls))} ms; decodes ${seen.join(' | ')}`);
  } finally {
    await loose.dispose();
  }
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

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
