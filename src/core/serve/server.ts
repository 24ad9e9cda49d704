import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { TbrlError, errorMessage } from '../errors';
import type { ChatTurn, GenerationResult, LocalEngine } from './engine';

export interface ServeOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Requests admitted at once (running + waiting); more get HTTP 429. */
  maxQueue?: number;
  /** Largest n one request may ask for. */
  maxN?: number;
  /** Default max_tokens when a request gives none. */
  defaultMaxTokens?: number;
  /** Largest request body, bytes. */
  maxBodyBytes?: number;
  log?: (line: string) => void;
}

export interface RunningServer {
  url: string;
  /** OpenAI-compatible root, e.g. http://127.0.0.1:45001/v1. */
  baseUrl: string;
  modelId: string;
  server: Server;
  /** Stops accepting, lets running requests finish (up to graceMs), then frees the model. */
  close(graceMs?: number): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** Names a client may use for the one served model besides its id. */
const ALIASES = new Set(['local', 'default']);

class HttpError extends Error {
  constructor(readonly status: number, readonly type: string, message: string, readonly param?: string) {
    super(message);
  }
}

/**
 * OpenAI-compatible chat completions over one local engine, in vLLM's dialect where OpenAI has no
 * field: `return_token_ids` adds `prompt_token_ids` to the response and `token_ids` to each choice,
 * and `usage.prompt_tokens_details.cached_tokens` counts the prompt tokens served from the KV cache.
 */
export async function startServer(engine: LocalEngine, options: ServeOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host)) throw new TbrlError('serve-host', `tbrl serve listens on loopback only, not ${host}.`, 'Use --host 127.0.0.1 (the default) and reach it through an SSH tunnel or a reverse proxy if needed.');
  const maxQueue = options.maxQueue ?? 16;
  const maxN = options.maxN ?? 16;
  const defaultMaxTokens = options.defaultMaxTokens ?? 256;
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const log = options.log ?? (() => undefined);
  let admitted = 0;
  let closing = false;
  const inflight = new Set<Promise<unknown>>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '');
    if (req.method === 'GET' && (path === '/health' || path === '')) return send(res, 200, { status: closing ? 'closing' : 'ok', model: engine.modelId });
    if (req.method === 'GET' && path === '/v1/models') {
      return send(res, 200, { object: 'list', data: [{ id: engine.modelId, object: 'model', created: 0, owned_by: 'tbrl', max_model_len: engine.contextSize }] });
    }
    if (path !== '/v1/chat/completions') throw new HttpError(404, 'not_found_error', `No route ${req.method} ${path}; this server has GET /v1/models and POST /v1/chat/completions.`);
    if (req.method !== 'POST') throw new HttpError(405, 'invalid_request_error', `${path} takes POST.`);
    if (closing) throw new HttpError(503, 'server_shutting_down', 'The server is shutting down.');
    if (admitted >= maxQueue) throw new HttpError(429, 'queue_full', `The queue is full (${maxQueue} requests running or waiting); retry later.`);
    admitted++;
    const abort = new AbortController();
    res.on('close', () => { if (!res.writableEnded) abort.abort(); });
    try {
      const body = parseRequest(await readBody(req, maxBody), engine, { maxN, defaultMaxTokens });
      const started = Date.now();
      const result = await engine.generate(body.messages, { ...body.sampling, signal: abort.signal });
      const answer = toResponse(engine, result, body);
      log(`chat n=${body.sampling.n} on the ${result.contextSequences}-sequence context, prompt=${result.promptTokenIds.length} (evaluated ${result.promptTokensEvaluated}, cached ${result.promptTokensReused}${result.promptTokensFromDisk ? `, ${result.promptTokensFromDisk} of them from the disk cache` : ''}) completion=${answer.usage.completion_tokens} ${Date.now() - started} ms`);
      send(res, 200, answer);
    } finally {
      admitted--;
    }
  };

  const server = createServer((req, res) => {
    const p = handle(req, res).catch((err) => {
      const e = toHttpError(err);
      if (e.status >= 500) log(`error: ${e.message}`);
      if (!res.headersSent && !res.destroyed) send(res, e.status, { error: { message: e.message, type: e.type, param: e.param ?? null, code: e.status } });
    });
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new TbrlError('serve-listen', `Cannot listen on ${host}:${options.port ?? 0}: ${errorMessage(err)}`, 'Pick another --port (or 0 for a free one).', { cause: err })));
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    modelId: engine.modelId,
    server,
    async close(graceMs = 10_000) {
      if (closing) return;
      closing = true;
      server.close();
      const timer = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([Promise.allSettled([...inflight]), timer]);
      server.closeAllConnections();
      await engine.dispose();
    },
  };
}

interface ParsedRequest {
  model: string;
  messages: ChatTurn[];
  sampling: { n: number; temperature: number; topP?: number; maxTokens: number; stop: string[]; seed?: number; topLogprobs: number };
  logprobs: boolean;
  returnTokenIds: boolean;
}

function parseRequest(raw: string, engine: LocalEngine, limits: { maxN: number; defaultMaxTokens: number }): ParsedRequest {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch (err) {
    throw new HttpError(400, 'invalid_request_error', `The body is not JSON: ${errorMessage(err)}`);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'invalid_request_error', 'The body must be a JSON object.');
  if (body.stream === true) throw new HttpError(400, 'invalid_request_error', 'stream=true is not supported by tbrl serve; send stream=false.', 'stream');
  const model = typeof body.model === 'string' ? body.model : '';
  if (model && model !== engine.modelId && !ALIASES.has(model)) {
    throw new HttpError(404, 'not_found_error', `The model \`${model}\` does not exist. This server serves ${engine.modelId}.`, 'model');
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new HttpError(400, 'invalid_request_error', 'messages must be a non-empty array of {role, content}.', 'messages');
  const messages: ChatTurn[] = body.messages.map((m: unknown, i: number) => {
    const msg = m as { role?: unknown; content?: unknown };
    if (msg?.role !== 'system' && msg?.role !== 'user' && msg?.role !== 'assistant') throw new HttpError(400, 'invalid_request_error', `messages[${i}].role must be system, user or assistant.`, 'messages');
    const content = typeof msg.content === 'string' ? msg.content
      : Array.isArray(msg.content) ? msg.content.map((p: { type?: string; text?: string }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('') : undefined;
    if (content === undefined) throw new HttpError(400, 'invalid_request_error', `messages[${i}].content must be a string.`, 'messages');
    return { role: msg.role, content };
  });
  const num = (key: string, lo: number, hi: number, integer = false): number | undefined => {
    const v = body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
      throw new HttpError(400, 'invalid_request_error', `${key} must be ${integer ? 'a whole number' : 'a number'} in [${lo}, ${hi}], not ${JSON.stringify(v)}.`, key);
    }
    return v;
  };
  const n = num('n', 1, limits.maxN, true) ?? 1;
  const maxTokens = num('max_completion_tokens', 1, engine.contextSize, true) ?? num('max_tokens', 1, engine.contextSize, true) ?? limits.defaultMaxTokens;
  const stopRaw = body.stop;
  const stop = stopRaw === undefined || stopRaw === null ? [] : typeof stopRaw === 'string' ? [stopRaw]
    : Array.isArray(stopRaw) && stopRaw.every((s) => typeof s === 'string') && stopRaw.length <= 16 ? stopRaw as string[] : undefined;
  if (!stop) throw new HttpError(400, 'invalid_request_error', 'stop must be a string or an array of at most 16 strings.', 'stop');
  const logprobs = body.logprobs === true;
  const topLogprobs = num('top_logprobs', 0, 20, true) ?? 0;
  if (topLogprobs > 0 && !logprobs) throw new HttpError(400, 'invalid_request_error', 'top_logprobs needs logprobs=true.', 'top_logprobs');
  return {
    model: model || engine.modelId,
    messages,
    sampling: { n, temperature: num('temperature', 0, 2) ?? 1, topP: num('top_p', 0, 1), maxTokens, stop, seed: num('seed', -(2 ** 53), 2 ** 53, true), topLogprobs },
    logprobs,
    returnTokenIds: body.return_token_ids === true,
  };
}

function toResponse(engine: LocalEngine, result: GenerationResult, req: ParsedRequest) {
  const bytes = (t: string) => [...Buffer.from(t, 'utf8')];
  const completionTokens = result.choices.reduce((a, c) => a + c.tokens.length, 0);
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: engine.modelId,
    choices: result.choices.map((c, index) => ({
      index,
      message: { role: 'assistant', content: c.text },
      finish_reason: c.finishReason,
      logprobs: req.logprobs ? {
        content: c.tokens.map((t) => ({
          token: t.text, logprob: t.logprob, bytes: bytes(t.text),
          top_logprobs: (t.top ?? []).map((a) => ({ token: a.text, logprob: a.logprob, bytes: bytes(a.text) })),
        })),
      } : null,
      ...(req.returnTokenIds ? { token_ids: c.tokens.map((t) => t.id) } : {}),
    })),
    usage: {
      prompt_tokens: result.promptTokenIds.length,
      completion_tokens: completionTokens,
      total_tokens: result.promptTokenIds.length + completionTokens,
      prompt_tokens_details: { cached_tokens: result.promptTokensReused },
    },
    ...(req.returnTokenIds ? { prompt_token_ids: result.promptTokenIds } : {}),
  };
}

function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof TbrlError) {
    if (err.code === 'context-overflow') return new HttpError(400, 'invalid_request_error', err.message, 'messages');
    if (err.code === 'serve-stopped') return new HttpError(503, 'server_shutting_down', err.message);
    if (err.code === 'cancelled') return new HttpError(499, 'cancelled', err.message);
  }
  return new HttpError(500, 'internal_error', errorMessage(err));
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(new HttpError(413, 'invalid_request_error', `The request body exceeds ${max} bytes.`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
