import type { Readable, Writable } from 'node:stream';
import { TbrlError, errorMessage } from '../errors';
import { computeDepgpo } from '../depgpo/compute';
import { depgpoOfTrajectory } from '../depgpo/trajectory';
import { stepAdvantages } from '../depgpo/factors';
import { parseTrajectory } from '../trajectory/reader';
import { VERSION } from '../version';
import { EpisodeEnvironment } from './environment';
import type { SandboxProvider } from '../sandbox/types';
import { checkDepgpoInput, expectNumber, PARAM_BOUNDS, ParamError } from './params';

/**
 * `tbrl env-server`: JSON-RPC 2.0 over stdio, one JSON object per line each way. stdout carries
 * replies only (logs go to stderr), so a client can read it line by line. Requests are handled one
 * at a time in arrival order: an episode is sequential by nature.
 */
export const PROTOCOL_VERSION = 1;
export const METHODS = ['initialize', 'reset', 'step', 'evaluate', 'credit', 'close', 'shutdown'] as const;

// JSON-RPC 2.0 error codes; application errors carry the TbrlError code and fix in `data`.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const APP_ERROR = -32000;

interface Request {
  jsonrpc: '2.0';
  id?: string | number | null;
  method: string;
  params?: Record<string, unknown>;
}

export interface ServeOptions {
  input: Readable;
  output: Writable;
  log?: (line: string) => void;
  provider?: SandboxProvider;
  /** Ends serving (after the request in flight) and closes the sandbox: wired to SIGTERM by the CLI. */
  signal?: AbortSignal;
}

export async function serveEnvironment(options: ServeOptions): Promise<void> {
  const log = options.log ?? (() => {});
  const env = new EpisodeEnvironment(options.provider, log);
  const send = (msg: object): void => {
    options.output.write(JSON.stringify(msg) + '\n');
  };
  const lines = boundedLines(options.input, PARAM_BOUNDS.maxRequestBytes);
  let stopping = false;
  options.signal?.addEventListener('abort', () => lines.close(), { once: true });
  try {
    for await (const line of lines) {
      if (line === TOO_LONG) {
        send({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: `Invalid request: a request line over ${PARAM_BOUNDS.maxRequestBytes} bytes was dropped unread`, data: { code: 'env-request-too-large', fix: 'Send smaller requests: pass a trajectory by its records, one episode at a time.' } } });
        continue;
      }
      if (!line.trim()) continue;
      let req: Request;
      try {
        req = JSON.parse(line) as Request;
      } catch (err) {
        send({ jsonrpc: '2.0', id: null, error: { code: PARSE_ERROR, message: `Parse error: ${errorMessage(err)}`, data: { fix: 'Send one JSON-RPC 2.0 object per line, e.g. {"jsonrpc":"2.0","id":1,"method":"initialize"}' } } });
        continue;
      }
      if (!req || typeof req !== 'object' || req.jsonrpc !== '2.0' || typeof req.method !== 'string') {
        send({ jsonrpc: '2.0', id: (req as Request | null)?.id ?? null, error: { code: INVALID_REQUEST, message: 'Invalid request: need {"jsonrpc":"2.0","id":..,"method":"..","params":{..}}' } });
        continue;
      }
      const isNotification = req.id === undefined;
      try {
        const result = await dispatch(env, req);
        if (!isNotification) send({ jsonrpc: '2.0', id: req.id, result });
        if (req.method === 'shutdown') {
          stopping = true;
          break;
        }
      } catch (err) {
        if (err instanceof MethodNotFound) {
          if (!isNotification) send({ jsonrpc: '2.0', id: req.id, error: { code: METHOD_NOT_FOUND, message: err.message, data: { methods: METHODS } } });
          continue;
        }
        log(`${req.method} failed: ${errorMessage(err)}`);
        if (!isNotification && err instanceof TbrlError && err.code === 'env-bad-params') {
          send({ jsonrpc: '2.0', id: req.id, error: { code: INVALID_PARAMS, message: `Invalid params: ${err.message.split('\n')[0]}`, data: { code: err.code, fix: err.fix, ...(err instanceof ParamError ? { field: err.field } : {}) } } });
          continue;
        }
        if (!isNotification) {
          send({ jsonrpc: '2.0', id: req.id, error: { code: APP_ERROR, message: errorMessage(err), data: err instanceof TbrlError ? { code: err.code, fix: err.fix } : { code: 'internal' } } });
        }
      }
    }
  } finally {
    // EOF or shutdown: never leave a container behind.
    await env.close().catch((err) => log(`closing the sandbox failed: ${errorMessage(err)}`));
    if (!stopping) lines.close();
  }
}

class MethodNotFound extends Error {}

async function dispatch(env: EpisodeEnvironment, req: Request): Promise<unknown> {
  if (req.params !== undefined && (req.params === null || typeof req.params !== 'object' || Array.isArray(req.params))) {
    throw new ParamError('params', 'must be an object of named parameters', `e.g. {"jsonrpc":"2.0","id":1,"method":"${req.method}","params":{}}`);
  }
  const p = (req.params ?? {}) as Record<string, unknown>;
  switch (req.method) {
    case 'initialize':
      return { server: 'tbrl env-server', version: VERSION, protocol: PROTOCOL_VERSION, methods: METHODS };
    case 'reset':
      return env.reset(p as never);
    case 'step':
      return env.step(p as never);
    case 'evaluate':
      return env.evaluate(p as never);
    case 'close':
      return { closed: await env.close() };
    case 'shutdown':
      return { ok: true };
    case 'credit':
      return credit(env, p);
    default:
      throw new MethodNotFound(`Method not found: "${req.method}". Known: ${METHODS.join(', ')}.`);
  }
}

/**
 * Per-step DepGPO factors for: the current episode (no params), a trajectory (`trajectory`: JSONL
 * text or an array of records), or a raw DepGPO input (`input`, the shape of test/vectors/depgpo).
 */
function credit(env: EpisodeEnvironment, p: Record<string, unknown>): unknown {
  const groupAdvantage = p.groupAdvantage === undefined ? undefined : expectNumber(p.groupAdvantage, 'params.groupAdvantage', -1e9, 1e9, 'Pass the group advantage Â_i as a number, e.g. {"groupAdvantage": 0.5}.');
  const withAdvantages = (r: { factors: number[]; z: number }) => (groupAdvantage !== undefined ? { advantages: stepAdvantages(r.factors, r.z, groupAdvantage) } : {});
  if (p.input !== undefined) {
    const result = computeDepgpo(checkDepgpoInput(p.input));
    return {
      stepScores: result.stepScores,
      factors: result.factors,
      z: result.z,
      commandScores: result.commandScores.map((c) => c.score),
      edges: result.edges.map((e) => [e.from, e.to, e.kind, e.labels]),
      resources: result.resources,
      ...(result.fallback ? { fallback: result.fallback } : {}),
      ...withAdvantages(result),
    };
  }
  if (p.trajectory !== undefined) {
    const text = typeof p.trajectory === 'string' ? p.trajectory : Array.isArray(p.trajectory) ? p.trajectory.map((r) => JSON.stringify(r)).join('\n') + '\n' : undefined;
    if (text === undefined) throw new ParamError('params.trajectory', 'must be JSONL text or an array of trajectory records', 'Pass the contents of a trajectory.jsonl.');
    const t = parseTrajectory(text, 'credit.trajectory');
    const { input, result } = depgpoOfTrajectory(t);
    return { stepScores: result.stepScores, factors: result.factors, z: result.z, stepTokens: input.stepTokens, ...(result.fallback ? { fallback: result.fallback } : {}), ...withAdvantages(result) };
  }
  return env.credit({ ...(groupAdvantage !== undefined ? { groupAdvantage } : {}) });
}

const TOO_LONG = Symbol('too long');

/**
 * Lines of `input`, each at most `maxBytes`: a longer line is skipped to its end without being
 * held (readline would buffer it whole, so one endless line could exhaust memory).
 */
function boundedLines(input: Readable, maxBytes: number): AsyncIterable<string | typeof TOO_LONG> & { close(): void } {
  let closed = false;
  const iterate = async function* (): AsyncGenerator<string | typeof TOO_LONG> {
    let parts: Buffer[] = [];
    let size = 0;
    let skipping = false;
    const chunks = (async function* () {
      try {
        for await (const chunk of input as AsyncIterable<Buffer | string>) yield chunk;
      } catch (err) {
        if (!closed) throw err; // a destroy by close() ends the stream early on purpose
      }
    })();
    for await (const chunk of chunks) {
      if (closed) return;
      let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a)) {
        if (skipping) skipping = false;
        else if (size + nl > maxBytes) yield TOO_LONG;
        else yield Buffer.concat([...parts, buf.subarray(0, nl)]).toString('utf8').replace(/\r$/, '');
        if (closed) return;
        parts = [];
        size = 0;
        buf = buf.subarray(nl + 1);
      }
      if (skipping || !buf.length) continue;
      if (size + buf.length > maxBytes) {
        parts = [];
        size = 0;
        skipping = true;
        yield TOO_LONG;
        continue;
      }
      parts.push(Buffer.from(buf));
      size += buf.length;
    }
    if (size && !closed && !skipping) yield Buffer.concat(parts).toString('utf8');
  };
  const it = iterate();
  return {
    [Symbol.asyncIterator]: () => it,
    close: () => {
      closed = true;
      // Ends a read that waits on the input (SIGTERM while the client is idle).
      input.destroy?.();
    },
  };
}
