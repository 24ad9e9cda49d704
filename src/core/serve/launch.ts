import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { TbrlError } from '../errors';
import { packageRoot } from '../sandbox/package-root';
import { defaultModelPath } from './default-model';
import { resolveServeCommand, SERVER_PATH_ENV } from './runtime';

export interface LocalServerOptions {
  modelPath?: string;
  port?: number;
  contextSize?: number;
  sequences?: number;
  threads?: number;
  /** A tbrl-studio install with node-llama-cpp (tbrl.model.serverPath); default: TBRL_SERVER_PATH, this install, `tbrl` on PATH. */
  serverPath?: string;
  /** Loading the model (seconds on a busy machine); default 120 s. */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface LocalServer {
  baseUrl: string;
  model: string;
  modelPath: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `tbrl serve` as a child process (the native model runtime stays out of the calling
 * process: the editor's extension host cannot load it, and a crash in it must not take a run
 * down with it). Resolves once the server prints its `listening` line.
 */
export async function startLocalServer(options: LocalServerOptions = {}): Promise<LocalServer> {
  const modelPath = options.modelPath ?? defaultModelPath();
  if (!existsSync(modelPath)) {
    throw new TbrlError('model-file-missing', `No model endpoint is configured and the default local model is not in the cache (${modelPath}).`,
      'Run `bash scripts/fetch-model.sh` (setup.sh does it) to fetch it, configure an endpoint (--base-url, OPENAI_BASE_URL), or use --policy oracle.');
  }
  // The server runs from an install whose node_modules hold node-llama-cpp (never from the .vsix).
  const command = resolveServeCommand({
    serverPath: options.serverPath ?? process.env[SERVER_PATH_ENV],
    packageRoot: packageRoot(),
    fromSource: __filename.endsWith('.ts'),
    pathEnv: process.env.PATH,
  });
  const argv = [...command.args];
  // TBRL_SERVE_PORT pins the port (shared machines hand out port ranges); default: any free one.
  const port = options.port ?? (Number(process.env.TBRL_SERVE_PORT) || 0);
  argv.push('serve', '--model-path', modelPath, '--port', String(port), '--exit-with-stdin');
  if (options.contextSize) argv.push('--context-size', String(options.contextSize));
  if (options.sequences) argv.push('--sequences', String(options.sequences));
  if (options.threads) argv.push('--threads', String(options.threads));
  // In the editor process.execPath is Electron: ELECTRON_RUN_AS_NODE makes it the plain Node the CLI needs.
  options.log?.(`tbrl serve runs from ${command.source}`);
  const child = spawn(process.execPath, argv, { cwd: command.root, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
  const stderrTail: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 20) stderrTail.shift();
    options.log?.(line);
  });
  const ready = await new Promise<{ baseUrl: string; model: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new TbrlError('serve-start', `tbrl serve did not start within ${(options.startTimeoutMs ?? 120_000) / 1000} s.`, 'The machine may be overloaded; retry, or start `tbrl serve` yourself and pass --base-url.'));
    }, options.startTimeoutMs ?? 120_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { event?: string; baseUrl?: string; model?: string };
        if (msg.event === 'listening' && msg.baseUrl && msg.model) { clearTimeout(timer); resolve({ baseUrl: msg.baseUrl, model: msg.model }); }
      } catch { /* not the ready line */ }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new TbrlError('serve-start', `tbrl serve exited before it was ready (${signal ?? `exit ${code}`}):\n${stderrTail.join('\n')}`, 'Read the lines above; a missing model file or runtime names its own fix.'));
    });
  });
  return { ...ready, modelPath, pid: child.pid!, stop: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
