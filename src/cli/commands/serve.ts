import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { LocalEngine, DEFAULT_CONTEXT_SIZE, DEFAULT_SEQUENCES } from '../../core/serve/engine';
import { startServer } from '../../core/serve/server';
import { defaultModelPath } from '../../core/serve/default-model';
import { loadSystemPrompt } from '../../core/agent/prompt';

function int(values: Record<string, unknown>, key: string, min: number): number | undefined {
  const raw = values[key];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${key} must be a whole number ≥ ${min}, not "${String(raw)}"`);
  return n;
}

export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'Serve a local GGUF model over an OpenAI-compatible API on loopback (default: the cached SmolLM2-135M)',
  usage: [
    'serve [--model-path FILE.gguf] [--port N] [--context-size TOKENS] [--sequences N] [--threads N] [--max-queue N] [--exit-with-stdin] [--warm-prefix]',
    '',
    `Default model: ${defaultModelPath()} (bash scripts/fetch-model.sh puts it there).`,
    'Endpoints: GET /v1/models, POST /v1/chat/completions (n, temperature, top_p, max_tokens, stop, seed,',
    'logprobs, top_logprobs; return_token_ids adds prompt_token_ids and per-choice token_ids, as vLLM does).',
    'The first stdout line is JSON: {"event":"listening","baseUrl":...,"model":...}. SIGINT/SIGTERM: graceful stop.',
    '--warm-prefix: read the agent system prompt once into the on-disk prefix cache (kv/ beside the model, per',
    'sequence count: the --sequences context and the 1-sequence context of N=1 requests) and exit, so the first',
    'turn of the next server with these --sequences loads it (setup.sh does it).',
  ].join('\n'),
  options: {
    'model-path': { type: 'string' },
    port: { type: 'string' },
    'context-size': { type: 'string' },
    sequences: { type: 'string' },
    threads: { type: 'string' },
    'max-queue': { type: 'string' },
    'exit-with-stdin': { type: 'boolean' },
    'warm-prefix': { type: 'boolean' },
  },
  async run({ values }) {
    const modelPath = (values['model-path'] as string | undefined) ?? defaultModelPath();
    const log = (line: string) => console.error(`tbrl serve: ${line}`);
    const started = Date.now();
    const engine = await LocalEngine.load({
      modelPath,
      contextSize: int(values, 'context-size', 256) ?? DEFAULT_CONTEXT_SIZE,
      sequences: int(values, 'sequences', 1) ?? DEFAULT_SEQUENCES,
      threads: int(values, 'threads', 1),
    });
    if (values['warm-prefix'] === true) {
      // Every run starts a server whose first turn opens with this system prompt; reading it here
      // (setup time) instead of there makes the first turn a state load. The user turn differs per
      // task: the cache matches the longest shared prefix, and the server re-reads only the rest.
      // Both context shapes: the N-candidate turns run on the shared context, N=1 turns on the solo one.
      try {
        for (const r of await engine.warmPrefixCache([{ role: 'system', content: loadSystemPrompt().text }, { role: 'user', content: 'warm-up' }])) {
          log(r.evaluated <= 0
            ? `the prefix cache of the ${r.contextSequences}-sequence context already holds the system prompt (${r.fromDisk} tokens loaded)`
            : `read ${r.evaluated} tokens of the system prompt in ${Math.round(r.ms)} ms and saved their state to the prefix cache of the ${r.contextSequences}-sequence context`);
        }
      } finally {
        await engine.dispose();
      }
      return 0;
    }
    const running = await startServer(engine, { port: int(values, 'port', 0) ?? 0, maxQueue: int(values, 'max-queue', 1), log });
    console.log(JSON.stringify({ event: 'listening', baseUrl: running.baseUrl, model: running.modelId, contextSize: engine.contextSize, sequences: engine.sequences, pid: process.pid }));
    log(`${running.modelId} (${engine.weightsDescription}) loaded in ${Date.now() - started} ms; listening on ${running.baseUrl}`);
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log(`${signal}: finishing running requests, then stopping`);
        void running.close().then(resolve);
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
      // Started by a run or the editor: a parent that dies closes our stdin, and we must not outlive it.
      if (values['exit-with-stdin'] === true) process.stdin.on('end', () => stop('parent gone')).resume();
    });
    return 0;
  },
};
