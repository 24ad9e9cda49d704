import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FileMap } from './types';

/** Running the rendered programs on the host (python3 + bash) against a scratch workspace. */
export interface Proc { code: number | null; stdout: string; stderr: string }

export function runProcess(argv: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Proc> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (err) => { clearTimeout(timer); resolvePromise({ code: null, stdout, stderr: stderr + String(err) }); });
    child.on('close', (code) => { clearTimeout(timer); resolvePromise({ code, stdout, stderr }); });
  });
}

export async function writeFiles(root: string, files: FileMap): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text);
  }
}

export async function scratchDir(prefix: string): Promise<{ dir: string; dispose: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}
