/**
 * A real OpenAI-compatible HTTP server for tests (node:http, port 0). Drives the real `openai`
 * client over HTTP so retries, errors, `n` and streaming are exercised end to end.
 *
 *   const srv = await startOpenAIServer({ models: ['m'], apiKey: 'k' });
 *   srv.enqueue('first answer', ['two', 'choices'], { status: 429 }, { drop: true });
 *   srv.respond = (req) => `echo ${req.messages.at(-1)?.content}`; // used when the queue is empty
 *   const client = new OpenAI({ baseURL: srv.baseUrl, apiKey: 'k' });   // baseUrl ends in /v1
 *   srv.requests;   // every chat request received (body, headers, time), for assertions
 *   await srv.close();
 *
 * Endpoints: POST /v1/chat/completions (honours `n`, `stream`, `stream_options.include_usage`),
 * GET /v1/models. Answers are taken from the queue first, then from `respond`; with neither the
 * server answers 500 "no scripted reply" so a missing script is loud.
 *
 * A Reply is one of:
 *   string            one text; repeated for each of the `n` choices
 *   string[]          exactly these choices (use it to return a wrong number of choices)
 *   ReplySpec         { choices?, status?, error?, malformed?, drop?, emptyChoices?, latencyMs?,
 *                       usage?, finishReason? }  — faults and fine control
 *
 * Toggles (mutable fields): `ignoreN` (always 1 choice), `latencyMs` (every call),
 * `apiKey` (401 on any other bearer token), `models` (404 model_not_found for others;
 * `modelsEndpoint = false` makes GET /v1/models answer 404).
 * Usage is chars/4 (rounded up) of the prompt and of each choice unless a reply sets `usage`.
 * With `logprobs: true` every word of a choice is one token with logprob −0.25.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ChatRequestRecord {
  body: {
    model: string;
    messages: Array<{ role: string; content: string }>;
    n?: number;
    stream?: boolean;
    max_tokens?: number;
    max_completion_tokens?: number;
    temperature?: number;
    [k: string]: unknown;
  };
  messages: Array<{ role: string; content: string }>;
  n: number;
  authorization?: string;
  receivedAt: number;
}

export interface ReplySpec {
  choices?: string[];
  /** Answer with this HTTP status and an OpenAI-shaped error body. */
  status?: number;
  error?: { message: string; type?: string; code?: string };
  /** 200 with a body that is not JSON. */
  malformed?: boolean;
  /** 200 with `choices: []`. */
  emptyChoices?: boolean;
  /** Destroy the socket without answering. */
  drop?: boolean;
  latencyMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number };
  finishReason?: string;
}

export type Reply = string | string[] | ReplySpec;
export type Responder = (req: ChatRequestRecord, callIndex: number) => Reply | Promise<Reply>;

export interface OpenAIServerOptions {
  models?: string[];
  apiKey?: string;
  latencyMs?: number;
  ignoreN?: boolean;
  respond?: Responder;
}

export interface OpenAIServer {
  /** e.g. http://127.0.0.1:41234/v1 — what `baseURL` / ModelConfig.baseUrl take. */
  readonly baseUrl: string;
  readonly requests: ChatRequestRecord[];
  /** Count of chat requests, including dropped and failed ones. */
  readonly calls: number;
  ignoreN: boolean;
  latencyMs: number;
  apiKey?: string;
  models?: string[];
  modelsEndpoint: boolean;
  respond?: Responder;
  enqueue(...replies: Reply[]): void;
  close(): Promise<void>;
}

const tokens = (s: string) => Math.ceil(s.length / 4);

/** With `logprobs: true`: one token per whitespace-separated word, each with logprob −0.25. */
function fakeLogprobs(text: string) {
  const words = text.split(/(?<=\s)/).filter(Boolean);
  return { content: words.map((token) => ({ token, logprob: -0.25, bytes: null, top_logprobs: [] })), refusal: null };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startOpenAIServer(options: OpenAIServerOptions = {}): Promise<OpenAIServer> {
  const queue: Reply[] = [];
  const sockets = new Set<Socket>();
  let calls = 0;
  let baseUrl = '';

  const state: OpenAIServer = {
    get baseUrl() { return baseUrl; },
    requests: [],
    get calls() { return calls; },
    ignoreN: options.ignoreN ?? false,
    latencyMs: options.latencyMs ?? 0,
    apiKey: options.apiKey,
    models: options.models,
    modelsEndpoint: true,
    respond: options.respond,
    enqueue: (...r) => { queue.push(...r); },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const sendError = (res: ServerResponse, status: number, message: string, type: string, code?: string) =>
    sendJson(res, status, { error: { message, type, code: code ?? null, param: null } });

  const authorized = (req: IncomingMessage) => !state.apiKey || req.headers.authorization === `Bearer ${state.apiKey}`;

  async function handleChat(req: IncomingMessage, res: ServerResponse, raw: string) {
    const callIndex = calls++;
    let body: ChatRequestRecord['body'];
    try {
      body = JSON.parse(raw) as ChatRequestRecord['body'];
    } catch {
      return sendError(res, 400, 'request body is not JSON', 'invalid_request_error');
    }
    const record: ChatRequestRecord = {
      body,
      messages: body.messages ?? [],
      n: body.n ?? 1,
      authorization: req.headers.authorization,
      receivedAt: Date.now(),
    };
    state.requests.push(record);
    if (!authorized(req)) return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    if (state.models && !state.models.includes(body.model)) {
      return sendError(res, 404, `The model \`${body.model}\` does not exist or you do not have access to it.`, 'invalid_request_error', 'model_not_found');
    }

    let reply: Reply;
    if (queue.length > 0) reply = queue.shift()!;
    else if (state.respond) reply = await state.respond(record, callIndex);
    else reply = { status: 500, error: { message: 'no scripted reply (queue empty and no respond function)' } };
    const spec: ReplySpec = typeof reply === 'string' || Array.isArray(reply) ? { choices: ([] as string[]).concat(reply) } : reply;
    const n = state.ignoreN ? 1 : record.n;
    const choices = spec.emptyChoices ? [] :
      typeof reply === 'string' ? Array.from({ length: n }, () => reply) :
      spec.choices ?? Array.from({ length: n }, () => '');

    const latency = spec.latencyMs ?? state.latencyMs;
    if (latency > 0) await sleep(latency);

    if (spec.drop) { req.socket.destroy(); return; }
    if (spec.status && spec.status >= 400) {
      const e = spec.error ?? { message: `scripted ${spec.status}` };
      return sendError(res, spec.status, e.message, e.type ?? (spec.status >= 500 ? 'server_error' : 'invalid_request_error'), e.code);
    }
    if (spec.malformed) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"id": "chatcmpl-broken", "choices": [ {"index": 0, "mess');
    }

    const promptText = record.messages.map((m) => String(m.content ?? '')).join('');
    const usage = spec.usage ?? {
      prompt_tokens: tokens(promptText),
      completion_tokens: choices.reduce((a, c) => a + tokens(c), 0),
    };
    const id = `chatcmpl-${callIndex}`;
    const created = Math.floor(Date.now() / 1000);
    const finish = spec.finishReason ?? 'stop';

    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (c: unknown) => res.write(`data: ${JSON.stringify(c)}\n\n`);
      choices.forEach((text, index) => {
        chunk({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
        // Two pieces per choice so clients really have to concatenate deltas.
        const mid = Math.ceil(text.length / 2);
        for (const piece of [text.slice(0, mid), text.slice(mid)]) {
          if (piece) chunk({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index, delta: { content: piece }, finish_reason: null }] });
        }
        chunk({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index, delta: {}, finish_reason: finish }] });
      });
      const so = body.stream_options as { include_usage?: boolean } | undefined;
      if (so?.include_usage) chunk({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
      res.end('data: [DONE]\n\n');
      return;
    }

    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      choices: choices.map((text, index) => ({ index, message: { role: 'assistant', content: text }, finish_reason: finish, logprobs: body.logprobs ? fakeLogprobs(text) : null })),
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
  }

  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      const path = (req.url ?? '').split('?')[0];
      void (async () => {
        if (req.method === 'POST' && path === '/v1/chat/completions') return handleChat(req, res, raw);
        if (req.method === 'GET' && path === '/v1/models') {
          if (!authorized(req)) return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
          if (!state.modelsEndpoint) return sendError(res, 404, 'not found', 'invalid_request_error');
          return sendJson(res, 200, { object: 'list', data: (state.models ?? []).map((id) => ({ id, object: 'model', created: 0, owned_by: 'test' })) });
        }
        sendError(res, 404, `no route ${req.method} ${path}`, 'invalid_request_error');
      })().catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, `test server failure: ${String(err)}`, 'server_error');
        else res.destroy();
      });
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return state;
}
