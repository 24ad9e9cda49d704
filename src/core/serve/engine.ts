import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';

// node-llama-cpp is an ES module with a native addon: loaded lazily so the CLI starts fast and
// nothing that merely imports core (the editor bundle, tests) ever loads it.
import type * as NodeLlamaCppModule from 'node-llama-cpp' with { 'resolution-mode': 'import' };
type NodeLlamaCpp = typeof NodeLlamaCppModule;
type LlamaModel = NodeLlamaCppModule.LlamaModel;
type LlamaContext = NodeLlamaCppModule.LlamaContext;
type LlamaContextSequence = NodeLlamaCppModule.LlamaContextSequence;
type Llama = NodeLlamaCppModule.Llama;
type ChatWrapper = NodeLlamaCppModule.ChatWrapper;
type ChatHistoryItem = NodeLlamaCppModule.ChatHistoryItem;

export interface EngineOptions {
  modelPath: string;
  /** Tokens of KV cache per sequence (prompt + completion must fit). */
  contextSize?: number;
  /** Parallel sequences: the most candidates generated at once (larger n queue on them). */
  sequences?: number;
  /** CPU threads; node-llama-cpp's default (all cores) stalls on a busy 2-core machine. */
  threads?: number;
  /** Where the prompt KV state is staged to copy it between sequences (a tmpfs is best). */
  stateDir?: string;
  /** Keep each sequence's KV cache between requests (default). false: every request reads its whole prompt (the benchmark's baseline). */
  reusePrefix?: boolean;
}

export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface SamplingOptions {
  n: number;
  temperature: number;
  topP?: number;
  maxTokens: number;
  stop: string[];
  seed?: number;
  /** Alternatives to report per generated token (0: only the sampled token's logprob). */
  topLogprobs: number;
  signal?: AbortSignal;
}

export interface GeneratedToken {
  id: number;
  text: string;
  /** ln p of the sampled token under the sampling distribution (after temperature and top-p). */
  logprob: number;
  top?: Array<{ id: number; text: string; logprob: number }>;
}

export interface GeneratedChoice {
  text: string;
  tokens: GeneratedToken[];
  finishReason: 'stop' | 'length';
}

export interface GenerationResult {
  promptTokenIds: number[];
  choices: GeneratedChoice[];
  /** Prompt tokens actually evaluated (the rest came from the KV cache), summed over sequences. */
  promptTokensEvaluated: number;
  /** Prompt tokens served from the KV cache of the sequence that read the prompt. */
  promptTokensReused: number;
}

export const DEFAULT_CONTEXT_SIZE = 4096;
export const DEFAULT_SEQUENCES = 4;
const LOGPROB_FLOOR = -1e4;
/** Below this many missing tokens re-reading beats saving and loading a state file. */
const COPY_THRESHOLD = 48;

/**
 * One GGUF model on the CPU with a pool of context sequences. Every request renders the chat with
 * the model's own Jinja template, then runs its N candidates on N sequences in parallel (llama.cpp
 * batches their decoding). Each sequence keeps its KV cache between requests: a conversation's
 * next turn shares the previous prompt as a prefix, so only the new tokens are evaluated. When a
 * sequence shares much less of the prompt than another one, the better sequence's state is copied
 * to it (saved and loaded through a state file) instead of re-reading the prompt.
 */
export class LocalEngine {
  private constructor(
    readonly modelPath: string,
    readonly modelId: string,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly pool: LlamaContextSequence[],
    private readonly wrapper: ChatWrapper,
    private readonly stateDir: string,
    readonly contextSize: number,
    private readonly reusePrefix: boolean,
  ) {}

  private busy = new Set<LlamaContextSequence>();
  private waiters: Array<() => void> = [];
  private disposed = false;

  static async load(options: EngineOptions): Promise<LocalEngine> {
    const { modelPath } = options;
    if (!existsSync(modelPath)) {
      throw new TbrlError('model-file-missing', `The model file ${modelPath} does not exist.`,
        'Run `bash scripts/fetch-model.sh` (or `bash scripts/setup.sh`) to put the default model in the cache, or pass --model-path to a GGUF file.');
    }
    if (!statSync(modelPath).isFile()) throw new TbrlError('model-file-missing', `${modelPath} is not a file.`, 'Pass the path of a .gguf file.');
    let lib: NodeLlamaCpp;
    try {
      lib = await import('node-llama-cpp');
    } catch (err) {
      throw new TbrlError('model-runtime-missing', `node-llama-cpp cannot be loaded: ${errorMessage(err)}`, 'Run `npm ci` in the tbrl-studio directory (node-llama-cpp ships a prebuilt CPU binary for linux-x64).', { cause: err });
    }
    const threads = options.threads ?? defaultThreads();
    const sequences = Math.max(1, options.sequences ?? DEFAULT_SEQUENCES);
    let llama: Llama;
    let model: LlamaModel;
    try {
      llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: lib.LlamaLogLevel.error, progressLogs: false });
      model = await llama.loadModel({ modelPath });
    } catch (err) {
      throw new TbrlError('model-load', `Cannot load the model ${modelPath}: ${errorMessage(err)}`, 'Check that the file is a complete GGUF model (re-run scripts/fetch-model.sh; it verifies the checksum).', { cause: err });
    }
    const contextSize = Math.min(options.contextSize ?? DEFAULT_CONTEXT_SIZE, model.trainContextSize);
    let context: LlamaContext;
    try {
      context = await model.createContext({ contextSize, sequences, threads, batchSize: Math.min(512, contextSize) });
    } catch (err) {
      await model.dispose();
      throw new TbrlError('model-load', `Cannot allocate a ${contextSize}-token context with ${sequences} sequences: ${errorMessage(err)}`, 'Lower --context-size or --sequences.', { cause: err });
    }
    const pool = Array.from({ length: sequences }, () => context.getSequence());
    const template = model.fileInfo.metadata?.tokenizer?.chat_template;
    const wrapper: ChatWrapper = typeof template === 'string' && template
      ? new lib.JinjaTemplateChatWrapper({ template, tokenizer: model.tokenizer })
      : lib.resolveChatWrapper(model) ?? new lib.GeneralChatWrapper();
    const stateDir = await mkdtemp(join(options.stateDir ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir()), 'tbrl-serve-'));
    const modelId = basename(modelPath).replace(/\.gguf$/i, '');
    return new LocalEngine(modelPath, modelId, llama, model, context, pool, wrapper, stateDir, contextSize, options.reusePrefix !== false);
  }

  get sequences(): number {
    return this.pool.length;
  }

  /** The chat rendered by the model's template, ending where the assistant's answer starts. */
  promptTokens(messages: ChatTurn[]): number[] {
    const history: ChatHistoryItem[] = messages.map((m) =>
      m.role === 'system' ? { type: 'system', text: m.content }
        : m.role === 'user' ? { type: 'user', text: m.content }
          : { type: 'model', response: [m.content] });
    // A generation prompt needs a trailing model turn to open.
    if (history[history.length - 1]?.type !== 'model') history.push({ type: 'model', response: [] });
    const { contextText } = this.wrapper.generateContextState({ chatHistory: history });
    return contextText.tokenize(this.model.tokenizer) as number[];
  }

  tokenize(text: string): number[] {
    return this.model.tokenize(text) as number[];
  }

  detokenize(ids: number[]): string {
    return this.model.detokenize(ids as never);
  }

  async generate(messages: ChatTurn[], o: SamplingOptions): Promise<GenerationResult> {
    const prompt = this.promptTokens(messages);
    return this.generateFromTokens(prompt, o);
  }

  async generateFromTokens(prompt: number[], o: SamplingOptions): Promise<GenerationResult> {
    if (this.disposed) throw new TbrlError('serve-stopped', 'The model server is shutting down.', 'Retry against a running server.');
    if (prompt.length + o.maxTokens > this.contextSize) {
      throw new TbrlError('context-overflow',
        `The prompt has ${prompt.length} tokens and max_tokens is ${o.maxTokens}: ${prompt.length + o.maxTokens} > the context of ${this.contextSize} tokens.`,
        `Shorten the conversation (set contextTokens ≤ ${this.contextSize - o.maxTokens} so old observations are elided), lower max_tokens, or start tbrl serve with a larger --context-size.`);
    }
    const stats = { evaluated: 0, reused: 0 };
    // The request holds up to n sequences (waiting for free ones when others are busy). The prompt
    // is read once, on the sequence that has most of it cached; the others receive a copy of that
    // state, so N candidates cost one prompt plus N batched generations.
    const width = Math.min(o.n, this.pool.length);
    const held = await this.acquire(width, prompt, o.signal);
    try {
      if (!this.reusePrefix) for (const seq of held) await seq.clearHistory();
      stats.reused = commonPrefix(held[0].contextTokens as number[], prompt.slice(0, -1));
      await this.align(held[0], prompt, stats);
      if (held.length > 1) await this.copyPrompt(held[0], held.slice(1), prompt, stats);
      const choices: GeneratedChoice[] = new Array(o.n);
      await Promise.all(held.map(async (seq, lane) => {
        for (let i = lane; i < o.n; i += held.length) {
          // A lane that runs a second candidate first rewinds to the prompt (an erase, no evaluation).
          if (i >= held.length) await this.align(seq, prompt, stats);
          choices[i] = await this.sample(seq, prompt, { ...o, seed: o.seed !== undefined ? o.seed + i : undefined });
        }
      }));
      return { promptTokenIds: prompt, choices, promptTokensEvaluated: stats.evaluated, promptTokensReused: stats.reused };
    } finally {
      this.release(held);
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const w of this.waiters.splice(0)) w();
    await this.context.dispose().catch(() => undefined);
    await this.model.dispose().catch(() => undefined);
    await this.llama.dispose().catch(() => undefined);
    await rm(this.stateDir, { recursive: true, force: true });
  }

  /**
   * `count` free sequences at once, those sharing the longest prefix with `prompt` first. Taking
   * them together (or waiting) keeps two requests from each holding part of the pool forever.
   */
  private async acquire(count: number, prompt: number[], signal?: AbortSignal): Promise<LlamaContextSequence[]> {
    for (;;) {
      if (this.disposed) throw new TbrlError('serve-stopped', 'The model server is shutting down.', 'Retry against a running server.');
      if (signal?.aborted) throw new TbrlError('cancelled', 'The request was cancelled.');
      const free = this.pool.filter((s) => !this.busy.has(s));
      if (free.length >= count) {
        const ranked = free.map((s) => ({ s, len: commonPrefix(s.contextTokens as number[], prompt) })).sort((a, b) => b.len - a.len);
        const taken = ranked.slice(0, count).map((r) => r.s);
        for (const s of taken) this.busy.add(s);
        return taken;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private release(seqs: LlamaContextSequence[]) {
    for (const s of seqs) this.busy.delete(s);
    // Every waiter re-checks; the ones that still lack sequences wait again.
    for (const w of this.waiters.splice(0)) w();
  }

  /** Brings `seq` to exactly the prompt's tokens minus the last, reusing its cached prefix. */
  private async align(seq: LlamaContextSequence, prompt: number[], stats: { evaluated: number; reused: number }) {
    // The last prompt token is fed to evaluate() so that it yields the first sampled token.
    const target = prompt.slice(0, -1);
    const shared = commonPrefix(seq.contextTokens as number[], target);
    const cached = seq.contextTokens.length;
    if (shared < cached) await seq.eraseContextTokenRanges([{ start: shared, end: cached }]);
    const rest = target.slice(shared);
    stats.evaluated += rest.length + 1;
    if (rest.length) await seq.evaluateWithoutGeneratingNewTokens(rest as never);
  }

  /** Gives every `other` sequence the aligned prompt state of `source`, by state copy when that saves work. */
  private async copyPrompt(source: LlamaContextSequence, others: LlamaContextSequence[], prompt: number[], stats: { evaluated: number; reused: number }) {
    const target = prompt.slice(0, -1);
    const behind = others.filter((s) => target.length - commonPrefix(s.contextTokens as number[], target) > COPY_THRESHOLD);
    if (behind.length) {
      const file = join(this.stateDir, `prompt-${Date.now()}-${Math.random().toString(36).slice(2)}.bin`);
      try {
        await source.saveStateToFile(file);
        for (const seq of behind) {
          await seq.clearHistory();
          await seq.loadStateFromFile(file, { acceptRisk: true });
        }
      } catch {
        // A failed copy costs only speed: align() below re-reads what is missing.
      } finally {
        await rm(file, { force: true });
      }
    }
    for (const seq of others) await this.align(seq, prompt, stats);
  }

  private async sample(seq: LlamaContextSequence, prompt: number[], o: SamplingOptions): Promise<GeneratedChoice> {
    const tokens: GeneratedToken[] = [];
    const wantTop = o.topLogprobs > 0;
    let finishReason: 'stop' | 'length' = 'length';
    let text = '';
    const generator = seq.evaluateWithMetadata(prompt.slice(-1) as never, { confidence: true, probabilities: wantTop }, {
      temperature: o.temperature,
      topP: o.topP,
      seed: o.seed,
    });
    try {
      for await (const out of generator) {
        if (o.signal?.aborted) throw new TbrlError('cancelled', 'The request was cancelled.');
        const id = out.token as number;
        if (this.model.isEogToken(out.token)) { finishReason = 'stop'; break; }
        const piece = this.model.detokenize([out.token], false, tokens.map((t) => t.id) as never);
        // Rounding can put a certain token's probability a hair above 1.
        const logprob = out.confidence > 0 ? Math.min(0, Math.log(out.confidence)) : LOGPROB_FLOOR;
        const entry: GeneratedToken = { id, text: piece, logprob };
        if (wantTop) {
          const probs = (out as { probabilities?: Map<number, number> }).probabilities;
          entry.top = probs ? [...probs.entries()].slice(0, o.topLogprobs).map(([tid, p]) => ({ id: tid, text: this.model.detokenize([tid as never]), logprob: p > 0 ? Math.log(p) : LOGPROB_FLOOR })) : [];
        }
        tokens.push(entry);
        text += piece;
        const hit = firstStop(text, o.stop);
        if (hit >= 0) { text = text.slice(0, hit); finishReason = 'stop'; break; }
        if (tokens.length >= o.maxTokens) break;
      }
      // The generator ends by itself at an end-of-generation token it does not yield.
      if (tokens.length < o.maxTokens) finishReason = 'stop';
    } finally {
      await generator.return(undefined);
    }
    return { text, tokens, finishReason };
  }
}

/**
 * llama.cpp's worker threads spin while they wait for each other, so on a machine whose cores are
 * already busy every extra thread makes generation slower, not faster (measured here: 32 tokens in
 * 60 s with 2 threads against 4 s with 1, at a load of 20 on 2 cores). One thread when the load
 * exceeds the cores, else up to 4.
 */
export function defaultThreads(): number {
  const cores = availableParallelism();
  return loadavg()[0] >= cores ? 1 : Math.max(1, Math.min(4, cores));
}

export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function firstStop(text: string, stops: string[]): number {
  let at = -1;
  for (const s of stops) {
    if (!s) continue;
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at;
}
