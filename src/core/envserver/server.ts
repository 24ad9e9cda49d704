import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { TbrlError, errorMessage } from '../errors';
import { computeDepgpo } from '../depgpo/compute';
import { depgpoOfTrajectory } from '../depgpo/trajectory';
import { stepAdvantages } from '../depgpo/factors';
import { parseTrajectory } from '../trajectory/reader';
import type { DepgpoInput } from '../depgpo/types';
import { VERSION } from '../version';
import { EpisodeEnvironment } from './environment';
import type { SandboxProvider } from '../sandbox/types';

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
  const rl = createInterface({ input: options.input, crlfDelay: Infinity });
  let stopping = false;
  options.signal?.addEventListener('abort', () => rl.close(), { once: true });
  try {
    for await (const line of rl) {
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
        if (!isNotification) {
          send({ jsonrpc: '2.0', id: req.id, error: { code: APP_ERROR, message: errorMessage(err), data: err instanceof TbrlError ? { code: err.code, fix: err.fix } : { code: 'internal' } } });
        }
      }
    }
  } finally {
    // EOF or shutdown: never leave a container behind.
    await env.close().catch((err) => log(`closing the sandbox failed: ${errorMessage(err)}`));
    if (!stopping) rl.close();
  }
}

class MethodNotFound extends Error {}

async function dispatch(env: EpisodeEnvironment, req: Request): Promise<unknown> {
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
  const groupAdvantage = typeof p.groupAdvantage === 'number' ? p.groupAdvantage : undefined;
  const withAdvantages = (r: { factors: number[]; z: number }) => (groupAdvantage !== undefined ? { advantages: stepAdvantages(r.factors, r.z, groupAdvantage) } : {});
  if (p.input !== undefined) {
    const result = computeDepgpo(p.input as DepgpoInput);
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
    if (text === undefined) throw new TbrlError('env-bad-params', 'credit.trajectory must be JSONL text or an array of trajectory records.', 'Pass the contents of a trajectory.jsonl.');
    const t = parseTrajectory(text, 'credit.trajectory');
    const { input, result } = depgpoOfTrajectory(t);
    return { stepScores: result.stepScores, factors: result.factors, z: result.z, stepTokens: input.stepTokens, ...(result.fallback ? { fallback: result.fallback } : {}), ...withAdvantages(result) };
  }
  return env.credit({ ...(groupAdvantage !== undefined ? { groupAdvantage } : {}) });
}
