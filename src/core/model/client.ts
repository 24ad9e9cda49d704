import OpenAI from 'openai';
import type { ChatMessage, Completion, ModelCallRecord, ModelConfig, SampleResult } from './types';
import { fitContext } from './context';
import { TbrlError, errorMessage } from '../errors';
import { mapLimit } from './concurrency';

export interface ModelClientOptions {
  /** Backoff base and cap; tests shorten them. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Diagnostic lines (retries, top-ups). Never receives the API key. */
  log?: (line: string) => void;
}

export interface CallOverrides {
  maxTokens?: number;
  temperature?: number;
  stop?: string[];
  signal?: AbortSignal;
}

/** What Node's fetch (undici) says when the peer goes away mid-response. */
const DROPPED_MID_BODY = /terminated|other side closed|socket hang up|ECONNRESET|EPIPE|UND_ERR_SOCKET|premature close|Premature close/;

const DEFAULTS = { timeoutMs: 120_000, maxRetries: 3, concurrency: 8, retryBaseMs: 500, retryMaxMs: 20_000 };

/** An answer that came back 200 but cannot be used (not JSON, no choices). Retried like a 5xx. */
class MalformedAnswer extends Error {}

type Failure = { kind: 'rate-limit' | 'server' | 'timeout' | 'connection' | 'malformed'; detail: string; retryAfterMs?: number };

/**
 * OpenAI-compatible chat client: samples N candidates for one history, retries transient
 * failures with capped exponential backoff and jitter, and turns everything else into a
 * TbrlError that names the endpoint (never the key).
 */
export class ModelClient {
  private readonly openai: OpenAI;
  /** Learned from the first answer: servers such as some vLLM/Ollama builds return 1 choice for n>1. */
  private serverIgnoresN = false;
  /** Learned: the server refused `return_token_ids` (strict OpenAI-compatible APIs reject unknown fields). */
  private serverRefusesTokenIds = false;

  constructor(readonly config: ModelConfig, private readonly options: ModelClientOptions = {}) {
    if (!config.baseUrl || !/^https?:\/\//.test(config.baseUrl)) {
      throw new TbrlError('model-config', `Model baseUrl "${config.baseUrl ?? ''}" is not an http(s) URL.`, 'Give the OpenAI-compatible base URL, e.g. http://localhost:8000/v1 or https://api.openai.com/v1.');
    }
    if (!config.model) throw new TbrlError('model-config', 'No model name configured.', 'Set the model, e.g. --model gpt-4o-mini or "model" in the config file.');
    this.openai = new OpenAI({
      baseURL: config.baseUrl,
      // Local servers (vLLM, Ollama) accept any key; the SDK insists on a non-empty one.
      apiKey: config.apiKey || 'none',
      maxRetries: 0,
      timeout: config.timeoutMs ?? DEFAULTS.timeoutMs,
    });
  }

  /** Samples `n` completions for the same conversation. */
  async sample(messages: ChatMessage[], n = 1, overrides: CallOverrides = {}): Promise<SampleResult> {
    if (!Number.isInteger(n) || n < 1) throw new TbrlError('model-config', `Cannot sample n=${n} candidates.`, 'Use a whole number of candidates, 1 or more (e.g. --n 4).');
    const reserve = overrides.maxTokens ?? this.config.maxTokens ?? 0;
    const fitted = fitContext(messages, this.config.contextTokens, reserve);
    const started = Date.now();
    const calls: ModelCallRecord[] = [];
    const completions: Completion[] = [];
    let promptTokenIds: number[] | undefined;

    if (n > 1 && !this.serverIgnoresN) {
      try {
        const first = await this.call(fitted.messages, n, overrides);
        calls.push(first.record);
        promptTokenIds ??= first.promptTokenIds;
        completions.push(...first.completions.slice(0, n));
        if (first.completions.length === 1) this.serverIgnoresN = true;
        if (completions.length < n) this.log(`${this.config.baseUrl} returned ${first.completions.length} of ${n} choices; topping up with parallel requests`);
      } catch (err) {
        // Some servers refuse `n` outright (HTTP 400). If the request itself is bad, the n=1
        // requests below fail the same way and report it.
        if (!(err instanceof TbrlError) || err.code !== 'model-bad-request') throw err;
        this.serverIgnoresN = true;
        this.log(`${this.config.baseUrl} refused n=${n}; sampling with parallel requests instead`);
      }
    }
    const missing = n - completions.length;
    if (missing > 0) {
      const extra = await mapLimit(Array.from({ length: missing }), this.config.concurrency ?? DEFAULTS.concurrency, () => this.call(fitted.messages, 1, overrides));
      for (const e of extra) {
        calls.push(e.record);
        promptTokenIds ??= e.promptTokenIds;
        completions.push(e.completions[0]);
      }
    }
    return {
      completions,
      usage: {
        promptTokens: calls.reduce((a, c) => a + c.promptTokens, 0),
        completionTokens: calls.reduce((a, c) => a + c.completionTokens, 0),
      },
      latencyMs: Date.now() - started,
      elided: fitted.elided,
      calls,
      ...(promptTokenIds ? { promptTokenIds } : {}),
    };
  }

  /** The server's model ids, or undefined when /models does not answer. */
  async listModels(): Promise<string[] | undefined> {
    try {
      const page = await this.openai.models.list({ timeout: 10_000 });
      return page.data.map((m) => m.id);
    } catch {
      return undefined;
    }
  }

  private async call(messages: ChatMessage[], n: number, o: CallOverrides): Promise<{ completions: Completion[]; record: ModelCallRecord; promptTokenIds?: number[] }> {
    const maxRetries = this.config.maxRetries ?? DEFAULTS.maxRetries;
    let last: Failure | undefined;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      if (attempt > 0) await this.backoff(attempt, last?.retryAfterMs, o.signal);
      const t0 = Date.now();
      // The SDK adds an abort listener to the signal of every request and never removes it: a
      // run-long signal would collect one per call (MaxListenersExceededWarning). Each request gets
      // its own signal, linked to the caller's only while the request lasts.
      const request = linkedSignal(o.signal);
      const askTokenIds = this.config.tokenIds !== false && !this.serverRefusesTokenIds;
      try {
        const res = await this.openai.chat.completions.create({
          model: this.config.model,
          messages,
          ...(n > 1 ? { n } : {}),
          temperature: o.temperature ?? this.config.temperature,
          top_p: this.config.topP,
          max_tokens: o.maxTokens ?? this.config.maxTokens,
          stop: o.stop ?? this.config.stop,
          ...(this.config.logprobs ? { logprobs: true } : {}),
          // vLLM's field (also SGLang's and tbrl serve's); the SDK sends unknown fields through.
          ...(askTokenIds ? { return_token_ids: true } : {}),
        } as OpenAI.ChatCompletionCreateParamsNonStreaming, { signal: request.signal }) as TokenAwareCompletion;
        if (!res || !Array.isArray(res.choices) || res.choices.length === 0) throw new MalformedAnswer('the answer has no choices');
        const completions: Completion[] = res.choices.map((c) => {
          const logprobs = Array.isArray(c.logprobs?.content) ? c.logprobs.content.map((t) => (typeof t.logprob === 'number' ? t.logprob : Number.NaN)) : undefined;
          const tokenIds = isIdList(c.token_ids) ? c.token_ids : undefined;
          return {
            text: typeof c.message?.content === 'string' ? c.message.content : '',
            finishReason: c.finish_reason ?? undefined,
            logprobSum: logprobs ? logprobs.reduce((a, t) => a + t, 0) : undefined,
            ...(tokenIds ? { tokenIds } : {}),
            ...(logprobs ? { logprobs } : {}),
          };
        });
        const completionTokens = res.usage?.completion_tokens ?? 0;
        // Per-choice counts come from the token ids or logprobs when the server gave them; else split the total so candidates stay comparable.
        for (const c of completions) c.completionTokens = c.tokenIds?.length ?? c.logprobs?.length ?? Math.round(completionTokens / completions.length);
        return {
          completions,
          record: { requested: n, received: completions.length, promptTokens: res.usage?.prompt_tokens ?? 0, completionTokens, latencyMs: Date.now() - t0, attempts: attempt + 1 },
          ...(isIdList(res.prompt_token_ids) ? { promptTokenIds: res.prompt_token_ids } : {}),
        };
      } catch (err) {
        if (o.signal?.aborted) throw new TbrlError('cancelled', 'Model call cancelled.', undefined, { cause: err });
        if (askTokenIds && err instanceof OpenAI.APIError && err.status === 400 && /return_token_ids/.test(errorMessage(err))) {
          this.serverRefusesTokenIds = true;
          this.log(`${this.config.baseUrl} refused return_token_ids; asking without token ids from now on`);
          attempt--;
          continue;
        }
        last = await this.classify(err, n);
        this.log(`model call to ${this.config.baseUrl} failed (${last.kind}: ${last.detail}); attempt ${attempt + 1} of ${maxRetries + 1}`);
      } finally {
        request.dispose();
      }
    }
    throw this.exhausted(last!, maxRetries + 1);
  }

  /** Returns a retryable failure, or throws the error that retrying cannot fix. */
  private async classify(err: unknown, n: number): Promise<Failure> {
    const url = this.config.baseUrl;
    if (err instanceof MalformedAnswer || err instanceof SyntaxError) return { kind: 'malformed', detail: this.redact(errorMessage(err)) };
    if (err instanceof OpenAI.APIConnectionTimeoutError) return { kind: 'timeout', detail: `no answer within ${this.config.timeoutMs ?? DEFAULTS.timeoutMs} ms` };
    if (err instanceof OpenAI.APIConnectionError) return { kind: 'connection', detail: this.redact(causeChain(err)) };
    // A server that drops the connection mid-body fails while the answer is read, outside the client's own connection errors.
    if (DROPPED_MID_BODY.test(causeChain(err)) || DROPPED_MID_BODY.test(String((err as { code?: string }).code ?? ''))) {
      return { kind: 'connection', detail: `the connection dropped while the answer was read: ${this.redact(causeChain(err))}` };
    }
    if (err instanceof OpenAI.APIError) {
      const status = err.status ?? 0;
      const serverSays = this.redact(errorMessage(err));
      if (status === 401 || status === 403) {
        throw new TbrlError('model-auth', `The model endpoint ${url} rejected the API key (HTTP ${status}): ${serverSays}`,
          this.config.apiKey ? 'Check that OPENAI_API_KEY (or apiKey in the config) is a valid key for this server.' : 'No API key is configured: set OPENAI_API_KEY or apiKey in the config.');
      }
      if (status === 404) throw await this.notFound(serverSays);
      if (status === 429) return { kind: 'rate-limit', detail: serverSays, retryAfterMs: retryAfter(err.headers) };
      if (status >= 500 || status === 408 || status === 409) return { kind: 'server', detail: `HTTP ${status}: ${serverSays}` };
      throw new TbrlError('model-bad-request', `The model endpoint ${url} refused the request (HTTP ${status}, n=${n}): ${serverSays}`,
        'Check maxTokens/temperature/stop against what this server accepts, and that the conversation fits the model\'s context (set contextTokens).');
    }
    throw new TbrlError('model-error', `Unexpected failure calling ${url}: ${this.redact(errorMessage(err))}`, 'Report this with the trajectory; the request itself may be fine.', { cause: err });
  }

  private async notFound(serverSays: string): Promise<TbrlError> {
    const url = this.config.baseUrl;
    const models = await this.listModels();
    if (models && !models.includes(this.config.model)) {
      const list = models.length ? models.slice(0, 20).join(', ') + (models.length > 20 ? `, … (${models.length} in all)` : '') : '(the server lists none)';
      return new TbrlError('model-unknown', `The server at ${url} does not know the model "${this.config.model}". It serves: ${list}.`,
        `Pick one of those, e.g. --model ${models[0] ?? '<name>'}.`);
    }
    if (models) {
      return new TbrlError('model-endpoint-not-found', `The server at ${url} lists "${this.config.model}" but answered 404 for chat completions: ${serverSays}`,
        'Check that baseUrl points at the OpenAI-compatible root (usually ending in /v1).');
    }
    return new TbrlError('model-unknown', `The server at ${url} answered 404 for model "${this.config.model}" (${serverSays}) and does not list its models.`,
      'Check the model name and that baseUrl ends in /v1 (e.g. http://localhost:8000/v1).');
  }

  private exhausted(f: Failure, attempts: number): TbrlError {
    const url = this.config.baseUrl;
    switch (f.kind) {
      case 'connection':
        return new TbrlError('model-unreachable', `Cannot reach the model endpoint ${url} (${attempts} attempts): ${f.detail}`,
          'Start the server or fix the URL/port (e.g. --base-url http://localhost:8000/v1), and check proxies/firewalls.');
      case 'timeout':
        return new TbrlError('model-timeout', `The model endpoint ${url} did not answer in time (${attempts} attempts, ${f.detail}).`,
          'Raise timeoutMs, lower maxTokens or n, or check that the server is not overloaded.');
      case 'rate-limit':
        return new TbrlError('model-rate-limited', `The model endpoint ${url} kept rate-limiting (HTTP 429, ${attempts} attempts): ${f.detail}`,
          'Lower the concurrency or n, raise maxRetries, or wait for the quota to reset.');
      case 'server':
        return new TbrlError('model-server-error', `The model endpoint ${url} kept failing (${attempts} attempts): ${f.detail}`,
          'Check the server\'s logs; it may be out of memory or still loading the model.');
      case 'malformed':
        return new TbrlError('model-malformed-answer', `The model endpoint ${url} returned an answer that is not a usable chat completion (${attempts} attempts): ${f.detail}`,
          'Check that the URL points at an OpenAI-compatible /v1 API (not a web UI or proxy error page).');
    }
  }

  private async backoff(attempt: number, retryAfterMs: number | undefined, signal?: AbortSignal) {
    const base = this.options.retryBaseMs ?? DEFAULTS.retryBaseMs;
    const cap = this.options.retryMaxMs ?? DEFAULTS.retryMaxMs;
    const exp = Math.min(cap, base * 2 ** (attempt - 1));
    // Full jitter in the upper half: spreads N parallel retries without collapsing the delay to ~0.
    const delay = Math.min(cap, Math.max(retryAfterMs ?? 0, exp * (0.5 + Math.random() * 0.5)));
    await new Promise<void>((resolve) => {
      const onAbort = (): void => { clearTimeout(t); resolve(); };
      const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, delay);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private redact(text: string): string {
    const key = this.config.apiKey;
    return key && key.length >= 4 ? text.split(key).join('***') : text;
  }

  private log(line: string) {
    this.options.log?.(this.redact(line));
  }
}

/** A signal that aborts with `outer` until disposed; then `outer` holds no listener of ours. */
function linkedSignal(outer: AbortSignal | undefined): { signal: AbortSignal | undefined; dispose: () => void } {
  if (!outer) return { signal: undefined, dispose: () => {} };
  const inner = new AbortController();
  const onAbort = (): void => inner.abort(outer.reason);
  if (outer.aborted) inner.abort(outer.reason);
  else outer.addEventListener('abort', onAbort, { once: true });
  return { signal: inner.signal, dispose: () => outer.removeEventListener('abort', onAbort) };
}

/** A chat completion as vLLM extends it with `return_token_ids`. */
type TokenAwareCompletion = Omit<OpenAI.ChatCompletion, 'choices'> & {
  prompt_token_ids?: unknown;
  choices: Array<OpenAI.ChatCompletion['choices'][number] & { token_ids?: unknown }>;
};

function isIdList(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => Number.isInteger(x));
}

function causeChain(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: string }).code;
    parts.push(code ? `${errorMessage(e)} [${code}]` : errorMessage(e));
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(' <- ');
}

function retryAfter(headers: Headers | undefined): number | undefined {
  const v = headers?.get?.('retry-after');
  if (!v) return undefined;
  const s = Number(v);
  return Number.isFinite(s) ? s * 1000 : undefined;
}
