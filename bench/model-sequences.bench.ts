// Why `tbrl serve` generates one sequence slower than node-llama-cpp in-process with 2 threads (#18,
// bench/model.bench.ts part 1: 0.81x at 2 threads, 0.98x at 1): the server's context holds N+1
// sequences. This runs node-llama-cpp alone, no server and no code of ours, on the default model:
// one sequence generating in a context created with `sequences: 1` vs `sequences: S`, same prompt
// (~1,700 tokens, chat template), same threads, alternated, and prints the ratio per thread count.
//
// Run: node --import tsx bench/model-sequences.bench.ts   (BENCH_SEQUENCES=8, BENCH_THREADS=1,2,
//      BENCH_TOKENS=64, BENCH_ROUNDS=4)
import { cpus, loadavg } from 'node:os';
import { defaultModelPath } from '../src/core/serve/default-model';
import { inProcessTokensPerSecond } from './llama-generate';

import type { LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

const modelPath = process.env.BENCH_MODEL ?? defaultModelPath();
const sequences = Number(process.env.BENCH_SEQUENCES ?? 8);
const threadCounts = (process.env.BENCH_THREADS ?? '1,2').split(',').map(Number);
const tokens = Number(process.env.BENCH_TOKENS ?? 64);
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function tokensPerSecond(model: LlamaModel, threads: number, seqCount: number, prompt: Token[], seeds: number[]): Promise<number[]> {
  const ctx = await model.createContext({ contextSize: 4096, sequences: seqCount, threads, batchSize: 512 });
  try {
    const seq = ctx.getSequence();
    await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
    const out: number[] = [];
    for (const seed of seeds) out.push(await inProcessTokensPerSecond(seq, prompt, tokens, seed));
    return out;
  } finally {
    await ctx.dispose();
  }
}

async function main(): Promise<void> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', maxThreads: Math.max(...threadCounts), logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const system = 'You are a careful terminal agent. Answer with one shell command in a bash block. '.repeat(100);
  const prompt = model.tokenize(`<|im_start|>system\n${system}<|im_end|>\n<|im_start|>user\nList the files in /app.<|im_end|>\n<|im_start|>assistant\n`, true);
  console.log(`${modelPath.split('/').pop()}: prompt ${prompt.length} tokens, ${tokens} generated, ${rounds} rounds alternated; ${cpus().length} cores, load average ${loadavg()[0].toFixed(2)}`);
  for (const threads of threadCounts) {
    const one: number[] = [];
    const many: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const seeds = [100 + r];
      if (r % 2 === 0) {
        one.push(...await tokensPerSecond(model, threads, 1, prompt, seeds));
        many.push(...await tokensPerSecond(model, threads, sequences, prompt, seeds));
      } else {
        many.push(...await tokensPerSecond(model, threads, sequences, prompt, seeds));
        one.push(...await tokensPerSecond(model, threads, 1, prompt, seeds));
      }
    }
    const ratios = many.map((x, i) => x / one[i]);
    console.log(`${threads} thread(s): one sequence in a ${sequences}-sequence context ${median(many).toFixed(1)} tok/s vs in a 1-sequence context ${median(one).toFixed(1)} tok/s -> ${median(ratios).toFixed(2)}x (pairs ${ratios.map((x) => x.toFixed(2)).join(' ')}); load average ${loadavg()[0].toFixed(2)}`);
  }
  await model.dispose();
  await llama.dispose();
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
