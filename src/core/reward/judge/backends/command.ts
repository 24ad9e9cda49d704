import { spawn } from 'node:child_process';
import { TbrlError } from '../../../errors';
import type { ChatMessage } from '../../../model/types';
import type { JudgeBackend, JudgeBackendKind } from './backend';

/** Any program that reads the prompt on stdin and prints its answer (`claude -p`, `llm`, a local script). */
export interface CommandJudgeConfig {
  kind: 'command';
  command: string;
  args?: string[];
  cwd?: string;
  timeoutMs?: number;
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

  constructor(private readonly config: CommandJudgeConfig) {
    this.label = commandBackend.label(config);
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

export const commandBackend: JudgeBackendKind<CommandJudgeConfig> = {
  kind: 'command',
  example: '{"kind": "command", "command": "claude", "args": ["-p"]}',
  parse(v, { fail, optString, optNumber }) {
    const command = optString('command');
    if (!command) fail('"command" is required for a command backend');
    if (v.args !== undefined && (!Array.isArray(v.args) || v.args.some((a) => typeof a !== 'string'))) fail('"args" must be a list of strings');
    return { kind: 'command', command: command!, args: v.args as string[] | undefined, cwd: optString('cwd'), timeoutMs: optNumber('timeoutMs') };
  },
  label: (c) => `command:${[c.command, ...(c.args ?? [])].join(' ')}`,
  create: (c) => new CommandJudgeBackend(c),
};
