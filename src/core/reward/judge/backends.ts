import { spawn } from 'node:child_process';
import { TbrlError } from '../../errors';
import { ModelClient, type ModelClientOptions } from '../../model/client';
import type { ChatMessage } from '../../model/types';

/**
 * Where judge prompts go: an OpenAI-compatible endpoint, or any program that reads the prompt on
 * stdin and prints its answer (a CLI such as `claude -p`, `llm`, or a local script).
 */
export type JudgeBackendConfig =
  | {
    kind: 'openai';
    baseUrl: string;
    model: string;
    /** Prefer apiKeyEnv: a key in a control file ends up in backups and shell history. */
    apiKey?: string;
    apiKeyEnv?: string;
    temperature?: number;
    maxTokens?: number;
    timeoutMs?: number;
  }
  | {
    kind: 'command';
    command: string;
    args?: string[];
    cwd?: string;
    timeoutMs?: number;
  };

export interface JudgeBackend {
  /** Names the backend in logs and records (never includes a key). */
  readonly label: string;
  complete(messages: ChatMessage[], signal?: AbortSignal): Promise<string>;
}

const EXAMPLES = [
  '{"kind": "openai", "baseUrl": "http://localhost:8000/v1", "model": "qwen3-32b", "apiKeyEnv": "JUDGE_API_KEY"}',
  '{"kind": "command", "command": "claude", "args": ["-p"]}',
].join('\n  or\n');

export function backendLabel(c: JudgeBackendConfig): string {
  return c.kind === 'openai' ? `openai:${c.model}@${c.baseUrl}` : `command:${[c.command, ...(c.args ?? [])].join(' ')}`;
}

/** Validates untrusted configuration (a control file, a setting) into a backend config. */
export function parseBackendConfig(value: unknown, source: string): JudgeBackendConfig {
  const fail = (what: string): never => {
    throw new TbrlError('judge.bad-backend', `${source}: ${what}`, `write one judge backend as JSON, e.g.\n  ${EXAMPLES}`);
  };
  if (!value || typeof value !== 'object' || Array.isArray(value)) return fail('the judge backend must be a JSON object');
  const v = value as Record<string, unknown>;
  const optNumber = (k: string) => {
    if (v[k] !== undefined && (typeof v[k] !== 'number' || !Number.isFinite(v[k] as number) || (v[k] as number) < 0)) fail(`"${k}" must be a non-negative number`);
    return v[k] as number | undefined;
  };
  const optString = (k: string) => {
    if (v[k] !== undefined && typeof v[k] !== 'string') fail(`"${k}" must be a string`);
    return v[k] as string | undefined;
  };
  if (v.kind === 'openai') {
    const baseUrl = optString('baseUrl');
    const model = optString('model');
    if (!baseUrl || !/^https?:\/\//.test(baseUrl)) fail('"baseUrl" must be an http(s) URL such as http://localhost:8000/v1');
    if (!model) fail('"model" is required for an openai backend');
    return {
      kind: 'openai', baseUrl: baseUrl!, model: model!, apiKey: optString('apiKey'), apiKeyEnv: optString('apiKeyEnv'),
      temperature: optNumber('temperature'), maxTokens: optNumber('maxTokens'), timeoutMs: optNumber('timeoutMs'),
    };
  }
  if (v.kind === 'command') {
    const command = optString('command');
    if (!command) fail('"command" is required for a command backend');
    if (v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== 'string'))) fail('"args" must be a list of strings');
    return { kind: 'command', command: command!, args: v.args as string[] | undefined, cwd: optString('cwd'), timeoutMs: optNumber('timeoutMs') };
  }
  return fail(`"kind" must be "openai" or "command", got ${JSON.stringify(v.kind)}`);
}

class OpenAIJudgeBackend implements JudgeBackend {
  readonly label: string;
  private readonly client: ModelClient;

  constructor(config: Extract<JudgeBackendConfig, { kind: 'openai' }>, clientOptions?: ModelClientOptions) {
    this.label = backendLabel(config);
    const apiKey = config.apiKey ?? (config.apiKeyEnv ? process.env[config.apiKeyEnv] : undefined);
    this.client = new ModelClient(
      { baseUrl: config.baseUrl, model: config.model, apiKey, temperature: config.temperature ?? 0.1, maxTokens: config.maxTokens ?? 1500, timeoutMs: config.timeoutMs },
      clientOptions,
    );
  }

  async complete(messages: ChatMessage[], signal?: AbortSignal): Promise<string> {
    const result = await this.client.sample(messages, 1, { signal });
    return result.completions[0]?.text ?? '';
  }
}

/** The whole conversation as one text, for programs that take a single prompt. */
export function renderForCommand(messages: ChatMessage[]): string {
  if (messages.length <= 2) return messages.map((m) => m.content).join('\n\n');
  return messages
    .map((m) => (m.role === 'assistant' ? `[Your previous answer]\n${m.content}` : m.role === 'user' ? `[User]\n${m.content}` : m.content))
    .join('\n\n');
}

class CommandJudgeBackend implements JudgeBackend {
  readonly label: string;

  constructor(private readonly config: Extract<JudgeBackendConfig, { kind: 'command' }>) {
    this.label = backendLabel(config);
  }

  complete(messages: ChatMessage[], signal?: AbortSignal): Promise<string> {
    const { command, args = [], cwd, timeoutMs = 300_000 } = this.config;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'], signal });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.stderr.on('data', (c: Buffer) => { if (err.reduce((a, b) => a + b.length, 0) < 64 * 1024) err.push(c); });
      child.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new TbrlError('judge.command-failed', `The judge command "${command}" could not be started: ${e.code ?? e.message}`,
          e.code === 'ENOENT' ? `install it or give its absolute path in the backend config ("command": "/usr/local/bin/${command}")` : 'check the command and its permissions'));
      });
      child.on('close', (code, sig) => {
        clearTimeout(timer);
        const stderr = Buffer.concat(err).toString('utf8').trim().slice(-2000);
        if (timedOut) return reject(new TbrlError('judge.command-timeout', `The judge command "${this.label}" did not answer within ${timeoutMs / 1000}s and was killed.`, 'raise "timeoutMs" in the backend config or use a faster model'));
        if (code !== 0) return reject(new TbrlError('judge.command-failed', `The judge command "${this.label}" exited with ${code ?? sig}${stderr ? `: ${stderr}` : ''}`, 'run it by hand with a prompt on stdin to see what it needs'));
        resolve(Buffer.concat(out).toString('utf8'));
      });
      // A program that exits without reading stdin must not crash us with EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(renderForCommand(messages));
    });
  }
}

export function createBackend(config: JudgeBackendConfig, clientOptions?: ModelClientOptions): JudgeBackend {
  return config.kind === 'openai' ? new OpenAIJudgeBackend(config, clientOptions) : new CommandJudgeBackend(config);
}
