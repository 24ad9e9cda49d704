import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
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
  /**
   * Directory of the on-disk prefix cache (KV states of long prompts, shared by every `tbrl serve`
   * of this model file): default `kv/` beside the model; false turns it off.
   */
  prefixCacheDir?: string | false;
  /** Keep the N candidates of a request in step so that each step is one batched decode (default). false: node-llama-cpp's own dispatch (the benchmark's baseline). */
  lockstep?: boolean;
  /**
   * Give N=1 requests a second context of one sequence (default when sequences > 1): llama.cpp
   * generates one sequence slower in a context made for several (0.90x in an 8-sequence context
   * with 2 threads, bench/model-sequences.bench.ts). Costs one more sequence of KV cache (the
   * weights are shared). false: every request uses the S-sequence context.
   */
  soloContext?: boolean;
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
  /** Of those, the tokens loaded from the on-disk prefix cache (a previous server's state). */
  promptTokensFromDisk?: number;
  /** Where the request's time went (ms): the benchmark separates batch decode cost from the longest sample's tail with it. */
  timings: GenerationTimings;
  /** Sequences of the context that served the request: 1 for the N=1 context of its own. */
  contextSequences: number;
}

export interface GenerationTimings {
  /** Waiting for free sequences (other requests hold them). */
  queueMs: number;
  /** Bringing the reading sequence to the prompt (disk cache, evaluation of the new tokens). */
  promptMs: number;
  /** Giving the other sequences the prompt (state copy, their own missing tokens). */
  copyMs: number;
  /** From the first candidate's start to the last one's end. */
  generateMs: number;
}

export const DEFAULT_CONTEXT_SIZE = 4096;
export const DEFAULT_SEQUENCES = 4;
const LOGPROB_FLOOR = -1e4;
/** Below this many missing tokens re-reading beats saving and loading a state file. */
const COPY_THRESHOLD = 48;
/** A shared prefix shorter than this (a chat template's opening tokens) is no reason to pick a sequence, unless it is half of a short prompt. */
const MIN_USEFUL_PREFIX = 32;
/** A prompt read from scratch at least this long is saved to the on-disk prefix cache... */
const DISK_SAVE_MIN_TOKENS = 512;
/** ...which is used when it spares at least this many tokens over what the sequence has. */
const DISK_LOAD_MIN_GAIN = 256;
/** States kept on disk per model (each is ~23 KB per token for SmolLM2-135M: 40 MB for the system prompt). */
const DISK_MAX_ENTRIES = 4;

/**
 * One llama.cpp context and what belongs to it: its sequences and its on-disk prefix cache
 * (llama.cpp loads a state only into a context with the same number of sequences).
 */
interface ContextShape {
  context: LlamaContext;
  sequences: LlamaContextSequence[];
  diskCache: PrefixDiskCache | undefined;
}

/**
 * One GGUF model on the CPU with a pool of context sequences. Every request renders the chat with
 * the model's own Jinja template, then runs its N candidates on N sequences in parallel (llama.cpp
 * batches their decoding). Each sequence keeps its KV cache between requests: a conversation's
 * next turn shares the previous prompt as a prefix, so only the new tokens are evaluated. When a
 * sequence shares much less of the prompt than another one, the better sequence's state is copied
 * to it (saved and loaded through a state file) instead of re-reading the prompt.
 *
 * N=1 requests (a conversation's turns, the verifier) go to a second context of one sequence when
 * it is free, the shared context is idle and none of its sequences holds more of their prompt: llama.cpp generates
 * faster there. Both contexts use the same weights; each has its own KV cache. A request's
 * sequences always come from one context (state copies and batched decodes stay within it), and
 * each sequence serves one request at a time, so concurrent requests never share a KV cache.
 */
export class LocalEngine {
  private constructor(
    readonly modelPath: string,
    readonly modelId: string,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly shared: ContextShape,
    private readonly solo: ContextShape | undefined,
    private readonly wrapper: ChatWrapper,
    private readonly stateDir: string,
    readonly contextSize: number,
    private readonly reusePrefix: boolean,
    private readonly lockstep: boolean,
  ) {
    for (const shape of [shared, solo]) for (const seq of shape?.sequences ?? []) this.shapeOf.set(seq, shape!);
  }

  private readonly shapeOf = new Map<LlamaContextSequence, ContextShape>();
  /** The shared context's sequences: N>1 requests run on these. */
  private get pool(): LlamaContextSequence[] {
    return this.shared.sequences;
  }
  /** The shared context (benchmarks' diagnostics read its batches). */
  get context(): LlamaContext {
    return this.shared.context;
  }

  private busy = new Set<LlamaContextSequence>();
  private lastUsed = new Map<LlamaContextSequence, number>();
  private clock = 0;
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
    const reuse = options.reusePrefix !== false;
    const diskDir = options.prefixCacheDir === false || !reuse ? undefined : options.prefixCacheDir ?? join(dirname(modelPath), 'kv');
    const contexts: LlamaContext[] = [];
    const shape = async (count: number): Promise<ContextShape> => {
      let context: LlamaContext;
      try {
        context = await model.createContext({ contextSize, sequences: count, threads, batchSize: Math.min(512, contextSize) });
      } catch (err) {
        for (const c of contexts) await c.dispose().catch(() => undefined);
        await model.dispose();
        throw new TbrlError('model-load', `Cannot allocate a ${contextSize}-token context with ${count} sequences: ${errorMessage(err)}`, 'Lower --context-size or --sequences.', { cause: err });
      }
      contexts.push(context);
      return {
        context,
        sequences: Array.from({ length: count }, () => context.getSequence()),
        // llama.cpp refuses a state saved from a context with another number of sequences (n_stream).
        diskCache: diskDir ? new PrefixDiskCache(join(diskDir, `${modelFileKey(modelPath)}-seq${count}`)) : undefined,
      };
    };
    const shared = await shape(sequences);
    const solo = sequences > 1 && options.soloContext !== false ? await shape(1) : undefined;
    const template = model.fileInfo.metadata?.tokenizer?.chat_template;
    const wrapper: ChatWrapper = typeof template === 'string' && template
      ? new lib.JinjaTemplateChatWrapper({ template, tokenizer: model.tokenizer })
      : lib.resolveChatWrapper(model) ?? new lib.GeneralChatWrapper();
    const stateDir = await mkdtemp(join(options.stateDir ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir()), 'tbrl-serve-'));
    const modelId = basename(modelPath).replace(/\.gguf$/i, '');
    return new LocalEngine(modelPath, modelId, llama, model, shared, solo, wrapper, stateDir, contextSize, reuse, options.lockstep !== false);
  }

  /** The weights' layout as llama.cpp reports it (e.g. "llama ?B Q4_0"): benchmarks print it next to their figures. */
  get weightsDescription(): string {
    return this.model.typeDescription;
  }

  /** The shared context's sequences: the most candidates generated at once. */
  get sequences(): number {
    return this.pool.length;
  }

  /** Whether N=1 requests have a context of their own. */
  get hasSoloContext(): boolean {
    return this.solo !== undefined;
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
    let mark = performance.now();
    const lap = () => { const now = performance.now(); const ms = now - mark; mark = now; return ms; };
    const held = await this.acquire(width, prompt, o.signal);
    const timings: GenerationTimings = { queueMs: lap(), promptMs: 0, copyMs: 0, generateMs: 0 };
    try {
      if (!this.reusePrefix) for (const seq of held) await seq.clearHistory();
      const fromDisk = await this.loadFromDisk(held[0], prompt);
      stats.reused = commonPrefix(held[0].contextTokens as number[], prompt.slice(0, -1));
      await this.align(held[0], prompt, stats);
      // A long prompt read from scratch (a system prompt, a task) is kept for the next server.
      const diskCache = this.shapeOf.get(held[0])!.diskCache;
      if (diskCache && stats.evaluated - 1 >= DISK_SAVE_MIN_TOKENS) await diskCache.save(held[0], prompt.slice(0, -1));
      timings.promptMs = lap();
      if (held.length > 1) await this.copyPrompt(held[0], held.slice(1), prompt, stats);
      timings.copyMs = lap();
      const choices: GeneratedChoice[] = new Array(o.n);
      // One lane has nobody to wait for: no gate, no promise per token.
      const gate = new LockstepGate(this.lockstep && held.length > 1);
      await Promise.all(held.map(async (seq, lane) => {
        for (let i = lane; i < o.n; i += held.length) {
          // A lane that runs a second candidate first rewinds to the prompt (an erase, no evaluation).
          if (i >= held.length) await this.align(seq, prompt, stats);
          choices[i] = await this.sample(seq, prompt, { ...o, seed: o.seed !== undefined ? o.seed + i : undefined }, gate);
        }
      }));
      timings.generateMs = lap();
      return {
        promptTokenIds: prompt, choices, promptTokensEvaluated: stats.evaluated, promptTokensReused: stats.reused,
        ...(fromDisk ? { promptTokensFromDisk: fromDisk } : {}), timings, contextSequences: this.shapeOf.get(held[0])!.sequences.length,
      };
    } finally {
      this.release(held);
    }
  }

  /**
   * Puts `messages`' prompt into the on-disk prefix cache of every context (the shared one and the
   * solo one have a cache each: llama.cpp loads a state only into the shape that saved it), reading
   * it where the cache lacks it: what `tbrl serve --warm-prefix` does at setup. Per context: the
   * tokens loaded from disk, or read.
   */
  async warmPrefixCache(messages: ChatTurn[]): Promise<Array<{ contextSequences: number; fromDisk: number; evaluated: number; ms: number }>> {
    const prompt = this.promptTokens(messages);
    const out = [];
    for (const shape of [this.shared, this.solo]) {
      if (!shape) continue;
      const t = performance.now();
      const seq = shape.sequences[0];
      const [held] = await this.acquireExactly(seq);
      try {
        const fromDisk = await this.loadFromDisk(held, prompt);
        const stats = { evaluated: 0, reused: 0 };
        await this.align(held, prompt, stats);
        if (shape.diskCache && stats.evaluated - 1 >= DISK_SAVE_MIN_TOKENS) await shape.diskCache.save(held, prompt.slice(0, -1));
        out.push({ contextSequences: shape.sequences.length, fromDisk, evaluated: stats.evaluated - 1, ms: performance.now() - t });
      } finally {
        this.release([held]);
      }
    }
    return out;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const w of this.waiters.splice(0)) w();
    if (this.solo) await this.solo.context.dispose().catch(() => undefined);
    await this.shared.context.dispose().catch(() => undefined);
    await this.model.dispose().catch(() => undefined);
    await this.llama.dispose().catch(() => undefined);
    await rm(this.stateDir, { recursive: true, force: true });
  }

  /**
   * `count` free sequences at once, those sharing the longest prefix with `prompt` first. Taking
   * them together (or waiting) keeps two requests from each holding part of the pool forever.
   * One sequence may also come from the solo context, which wins ties. Only one context decodes at
   * a time: two would run two sets of llama.cpp threads on the same cores, whose spin-waits make an
   * oversubscribed machine many times slower. So the solo context is taken only while the shared one
   * is idle, and nothing starts on the shared one while the solo one is busy (an N=1 request takes
   * less time than that slowdown would cost).
   */
  private async acquire(count: number, prompt: number[], signal?: AbortSignal): Promise<LlamaContextSequence[]> {
    const soloFirst = (a: LlamaContextSequence, b: LlamaContextSequence) => Number(this.shapeOf.get(b) === this.solo) - Number(this.shapeOf.get(a) === this.solo);
    for (;;) {
      if (this.disposed) throw new TbrlError('serve-stopped', 'The model server is shutting down.', 'Retry against a running server.');
      if (signal?.aborted) throw new TbrlError('cancelled', 'The request was cancelled.');
      const soloBusy = this.solo ? this.solo.sequences.some((s) => this.busy.has(s)) : false;
      const sharedBusy = this.pool.some((s) => this.busy.has(s));
      const candidates = soloBusy ? [] : count === 1 && this.solo && !sharedBusy ? [...this.solo.sequences, ...this.pool] : this.pool;
      const free = candidates.filter((s) => !this.busy.has(s));
      if (free.length >= count) {
        // Most useful cache first; among sequences with nothing useful (a chat template's few shared
        // opening tokens do not count), the least recently used, so that another conversation's
        // cache (the verifier's, between the policy's turns) survives. The solo context wins a tie
        // of useful caches, and of unused ones; it never evicts a cache an unused sequence could spare.
        const ranked = free.map((s) => {
          const len = commonPrefix(s.contextTokens as number[], prompt);
          return { s, len: len >= Math.min(MIN_USEFUL_PREFIX, prompt.length / 2) ? len : 0, used: this.lastUsed.get(s) ?? 0 };
        }).sort((a, b) => b.len - a.len || (a.len > 0 ? soloFirst(a.s, b.s) || a.used - b.used : a.used - b.used || soloFirst(a.s, b.s)));
        const taken = ranked.slice(0, count).map((r) => r.s);
        for (const s of taken) this.busy.add(s);
        return taken;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** That one sequence, once it is free. */
  private async acquireExactly(seq: LlamaContextSequence): Promise<LlamaContextSequence[]> {
    while (this.busy.has(seq)) {
      if (this.disposed) throw new TbrlError('serve-stopped', 'The model server is shutting down.', 'Retry against a running server.');
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.busy.add(seq);
    return [seq];
  }

  private release(seqs: LlamaContextSequence[]) {
    const now = ++this.clock;
    for (const s of seqs) {
      this.busy.delete(s);
      this.lastUsed.set(s, now);
    }
    // Every waiter re-checks; the ones that still lack sequences wait again.
    for (const w of this.waiters.splice(0)) w();
  }

  /** Loads the on-disk state sharing the longest prefix with `prompt` when it beats what `seq` has; the tokens it brought. */
  private async loadFromDisk(seq: LlamaContextSequence, prompt: number[]): Promise<number> {
    const diskCache = this.shapeOf.get(seq)!.diskCache;
    if (!diskCache) return 0;
    const target = prompt.slice(0, -1);
    const have = commonPrefix(seq.contextTokens as number[], target);
    if (target.length - have < DISK_LOAD_MIN_GAIN) return 0;
    const best = await diskCache.best(target);
    if (!best || best.shared < have + DISK_LOAD_MIN_GAIN) return 0;
    try {
      await seq.clearHistory();
      await seq.loadStateFromFile(best.file, { acceptRisk: true });
      return commonPrefix(seq.contextTokens as number[], target);
    } catch {
      // A damaged or foreign file costs only speed: the prompt is read instead.
      await seq.clearHistory();
      await diskCache.drop(best.file);
      return 0;
    }
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

  private async sample(seq: LlamaContextSequence, prompt: number[], o: SamplingOptions, gate: LockstepGate): Promise<GeneratedChoice> {
    // Per-token work here runs on the JS thread between llama.cpp's decodes, on the same cores as its
    // threads: it is kept to what each token needs (no re-scan of the text, no copy of the ids).
    const tokens: GeneratedToken[] = [];
    const ids: number[] = [];
    const wantTop = o.topLogprobs > 0;
    const stops = o.stop.filter((x) => x.length > 0);
    const longestStop = stops.reduce((m, x) => Math.max(m, x.length), 0);
    let finishReason: 'stop' | 'length' = 'length';
    let text = '';
    const generator = seq.evaluateWithMetadata(prompt.slice(-1) as never, { confidence: true, probabilities: wantTop }, {
      temperature: o.temperature,
      topP: o.topP,
      seed: o.seed,
    });
    gate.join();
    try {
      for await (const out of generator) {
        if (o.signal?.aborted) throw new TbrlError('cancelled', 'The request was cancelled.');
        const id = out.token as number;
        if (this.model.isEogToken(out.token)) { finishReason = 'stop'; break; }
        const piece = this.model.detokenize([out.token], false, ids as never);
        // Rounding can put a certain token's probability a hair above 1.
        const logprob = out.confidence > 0 ? Math.min(0, Math.log(out.confidence)) : LOGPROB_FLOOR;
        const entry: GeneratedToken = { id, text: piece, logprob };
        if (wantTop) {
          const probs = (out as { probabilities?: Map<number, number> }).probabilities;
          entry.top = probs ? [...probs.entries()].slice(0, o.topLogprobs).map(([tid, p]) => ({ id: tid, text: this.model.detokenize([tid as never]), logprob: p > 0 ? Math.log(p) : LOGPROB_FLOOR })) : [];
        }
        tokens.push(entry);
        ids.push(id);
        const scanFrom = Math.max(0, text.length - longestStop + 1);
        text += piece;
        // Earlier text held no stop, so a stop here ends in this piece: only the tail is scanned.
        const hit = stops.length ? firstStop(text, stops, scanFrom) : -1;
        if (hit >= 0) { text = text.slice(0, hit); finishReason = 'stop'; break; }
        if (tokens.length >= o.maxTokens) break;
        // Ask for the next token only when every candidate has its current one, so that
        // node-llama-cpp decodes all of them in one batch instead of splitting the step.
        await gate.arrive();
      }
      // The generator ends by itself at an end-of-generation token it does not yield.
      if (tokens.length < o.maxTokens) finishReason = 'stop';
    } finally {
      // A finished candidate leaves the batch at once: the others do not wait for it.
      gate.leave();
      await generator.return(undefined);
    }
    return { text, tokens, finishReason };
  }
}

/**
 * Keeps the candidates of one request in step. node-llama-cpp batches the decodes that are queued
 * when it dispatches (on the next event-loop turn, or right after the previous batch); a candidate
 * whose continuation runs a little later misses that dispatch and is decoded alone, and from then
 * on one candidate trails the others every step (measured: 10 decodes of 1 + 6 + 7×7 + 8 tokens
 * for 8 candidates × 8 tokens instead of 8 decodes of 8). Each candidate arrives after taking its
 * token; the last arrival releases all of them, so their next decodes are queued together.
 */
export class LockstepGate {
  constructor(private readonly enabled = true) {}

  private active = 0;
  private arrived = 0;
  private waiting: Array<() => void> = [];

  join(): void {
    this.active++;
  }

  leave(): void {
    this.active--;
    this.releaseIfComplete();
  }

  arrive(): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    this.arrived++;
    const wait = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.releaseIfComplete();
    return wait;
  }

  private releaseIfComplete(): void {
    if (this.arrived < this.active || this.waiting.length === 0) return;
    this.arrived = 0;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/**
 * KV states of long prompts on disk, so a new `tbrl serve` (every `tbrl run` and demo starts one)
 * does not re-read the 1,700-token system prompt: on 2 busy cores that is a minute or more, loading
 * the state is a fraction of a second. One directory per model file (name, size and mtime: a state
 * is only valid for the exact weights) and number of sequences (llama.cpp checks it on load); each entry is `<hash>.bin` (llama.cpp's sequence state,
 * tokens included) plus `<hash>.json` (the tokens, to match without loading). Writes go through a
 * temporary name and a rename, so concurrent servers never read half a file; the least recently
 * used entries beyond DISK_MAX_ENTRIES are removed.
 */
class PrefixDiskCache {
  private index = new Map<string, number[]>();
  private scanned = false;

  constructor(private readonly dir: string) {}

  async best(target: number[]): Promise<{ file: string; shared: number } | undefined> {
    await this.scan();
    let best: { file: string; shared: number } | undefined;
    for (const [file, tokens] of this.index) {
      // A state that goes on past the shared part (another task after the same system prompt) is
      // loaded too: align() erases its tail.
      const shared = commonPrefix(tokens, target);
      if (!best || shared > best.shared) best = { file, shared };
    }
    if (best) await utimes(best.file, new Date(), new Date()).catch(() => undefined);
    return best;
  }

  async save(seq: LlamaContextSequence, tokens: number[]): Promise<void> {
    const name = createHash('sha256').update(Uint32Array.from(tokens)).digest('hex').slice(0, 32);
    const file = join(this.dir, `${name}.bin`);
    if (this.index.has(file)) return;
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      await mkdir(this.dir, { recursive: true });
      await seq.saveStateToFile(tmp);
      await writeFile(`${tmp}.json`, JSON.stringify(tokens));
      await rename(`${tmp}.json`, join(this.dir, `${name}.json`));
      await rename(tmp, file);
      this.index.set(file, tokens);
      await this.evict();
    } catch {
      // A full disk or a read-only cache only costs the next server a prompt read.
      await rm(tmp, { force: true });
      await rm(`${tmp}.json`, { force: true });
    }
  }

  async drop(file: string): Promise<void> {
    this.index.delete(file);
    await rm(file, { force: true });
    await rm(file.replace(/\.bin$/, '.json'), { force: true });
  }

  private async scan(): Promise<void> {
    if (this.scanned) return;
    this.scanned = true;
    const names = await readdir(this.dir).catch(() => [] as string[]);
    for (const n of names.filter((x) => x.endsWith('.bin'))) {
      const file = join(this.dir, n);
      try {
        const tokens = JSON.parse(await readFile(file.replace(/\.bin$/, '.json'), 'utf8')) as unknown;
        if (Array.isArray(tokens) && tokens.every((t) => Number.isInteger(t))) this.index.set(file, tokens as number[]);
      } catch {
        /* an entry without its tokens cannot be matched */
      }
    }
  }

  private async evict(): Promise<void> {
    if (this.index.size <= DISK_MAX_ENTRIES) return;
    const aged = await Promise.all([...this.index.keys()].map(async (file) => ({ file, used: (await stat(file).catch(() => undefined))?.mtimeMs ?? 0 })));
    aged.sort((a, b) => a.used - b.used);
    for (const { file } of aged.slice(0, this.index.size - DISK_MAX_ENTRIES)) await this.drop(file);
  }
}

/** The on-disk cache's per-model directory name: the file's name, size and mtime. */
function modelFileKey(modelPath: string): string {
  const st = statSync(modelPath);
  return `${basename(modelPath).replace(/[^\w.-]/g, '_')}-${st.size}-${Math.floor(st.mtimeMs)}`;
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

/** Where the first stop string starts in `text`, looking from `from` on; -1: none. */
export function firstStop(text: string, stops: string[], from = 0): number {
  let at = -1;
  for (const s of stops) {
    if (!s) continue;
    const i = text.indexOf(s, from);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at;
}
