import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import { packageRoot } from '../sandbox/package-root';
import type { RayJobsClient } from './jobs';
import { MetricsParser } from './metrics';

export interface FetchOptions {
  client: RayJobsClient;
  jobId: string;
  /** Where the checkpoint folder and the .gguf go; default `.tbrl/models`. */
  outDir: string;
  /** Python with torch + gguf (the training venv); default .venv/train/bin/python of the install, or TBRL_TRAIN_PYTHON. */
  python?: string;
  /** f16 (default, half the size) or f32. */
  dtype?: 'f16' | 'f32';
  onProgress?: (message: string) => void;
}

export interface FetchResult {
  checkpoint: string;
  gguf: string;
  step: number;
}

/** The last checkpoint a job announced in its log (`tbrl-metrics {"event": "checkpoint", ...}`). */
export function lastCheckpoint(log: string): { path: string; step: number } | undefined {
  const m = new MetricsParser();
  m.push(log);
  m.end();
  const cps = m.events.filter((e) => e.event === 'checkpoint' && typeof e.path === 'string');
  const last = cps[cps.length - 1];
  return last ? { path: String(last.path), step: Number(last.step ?? 0) } : undefined;
}

export function trainingPython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TBRL_TRAIN_PYTHON) return env.TBRL_TRAIN_PYTHON;
  return join(packageRoot(), '.venv', 'train', 'bin', 'python');
}

/**
 * Brings a finished job's last checkpoint here and converts it to GGUF for `tbrl serve`. Ray's Jobs
 * API moves no files, so the checkpoint is read where the job wrote it: the same machine (a local
 * cluster) or storage every node and this machine share (TBRL_CHECKPOINT_DIR on the nodes).
 */
export async function fetchCheckpoint(options: FetchOptions): Promise<FetchResult> {
  const progress = options.onProgress ?? (() => {});
  const job = await options.client.status(options.jobId);
  const cp = lastCheckpoint(await options.client.logs(options.jobId));
  if (!cp) {
    throw new TbrlError('train-no-checkpoint', `Job ${options.jobId} (${job.status}) has written no checkpoint.`, job.status === 'RUNNING' || job.status === 'PENDING' ? 'Wait until it saves one (cpu-tiny saves at the end, or every tbrl.save_every steps), then fetch again.' : 'Only training presets (cpu-tiny, GPU presets) write checkpoints; see `tbrl train logs` for why this one did not.');
  }
  if (!existsSync(cp.path) || !statSync(cp.path).isDirectory()) {
    throw new TbrlError('train-checkpoint-remote', `Job ${options.jobId} saved its checkpoint at ${cp.path} on a cluster node, which this machine cannot read.`, 'Set TBRL_CHECKPOINT_DIR on the Ray nodes to storage this machine mounts too (NFS, a shared volume), or copy the folder here (e.g. `ray rsync-down`) and run `python -m tbrl_bridge.gguf_export DIR OUT.gguf`.');
  }
  const dest = resolve(options.outDir, options.jobId);
  mkdirSync(dest, { recursive: true });
  const local = join(dest, `step-${String(cp.step).padStart(4, '0')}`);
  cpSync(cp.path, local, { recursive: true });
  progress(`Checkpoint step ${cp.step} copied to ${local}`);
  const gguf = join(dest, `${options.jobId}.gguf`);
  const python = options.python ?? trainingPython();
  if (!existsSync(python)) throw new TbrlError('train-python', `No training Python at ${python} to convert the checkpoint to GGUF.`, 'Run `bash scripts/setup.sh` (it makes .venv/train), or pass --python / set TBRL_TRAIN_PYTHON to a Python with torch, safetensors and gguf.');
  progress(`Converting to GGUF with ${python} -m tbrl_bridge.gguf_export`);
  await runPython(python, ['-m', 'tbrl_bridge.gguf_export', local, gguf, '--dtype', options.dtype ?? 'f16'], join(packageRoot(), 'trainer-bridge'));
  return { checkpoint: local, gguf, step: cp.step };
}

function runPython(python: string, args: string[], bridgeDir: string): Promise<void> {
  return new Promise((res, rej) => {
    const child = spawn(python, args, { env: { ...process.env, PYTHONPATH: bridgeDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stdout.on('data', () => {});
    child.stderr.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
    child.on('error', (e) => rej(new TbrlError('train-python', `Cannot run ${python}: ${e.message}`, 'Pass --python or set TBRL_TRAIN_PYTHON to the training venv\'s python.')));
    child.on('close', (code) => (code === 0 ? res() : rej(new TbrlError('train-gguf-export', `The GGUF conversion failed (exit ${code}): ${err.trim().split('\n').slice(-3).join(' | ')}`, 'Check that the checkpoint is a cpu-tiny checkpoint and that its base GGUF (tbrl-checkpoint.json) is on this machine.'))));
  });
}
