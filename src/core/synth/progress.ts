import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import { checkContract, gatedCredit, potential, type ProgressContract } from './contract';

/**
 * Φ of a running container: the task's rendered grader (tests/progress.py + progress.json) is
 * copied into a private directory of the container, run against /app and removed again, so the
 * agent never sees the expected artifacts between steps.
 */
export interface ProgressEvaluation { phi: number; credit: Record<string, number>; gated: Record<string, number>; durationMs: number }

/** The progress contract file of a task, or undefined for tasks without one (not Tev tasks). */
export async function progressContractPath(task: Task): Promise<string | undefined> {
  const candidates = task.progressContract ? [join(task.dir, task.progressContract), join(task.tests.dir, 'progress.json')] : [join(task.tests.dir, 'progress.json')];
  for (const c of candidates) {
    if (await readFile(c).then(() => true, () => false)) return c;
  }
  return undefined;
}

export async function loadProgressContract(task: Task): Promise<ProgressContract | undefined> {
  const path = await progressContractPath(task);
  if (!path) return undefined;
  let parsed: ProgressContract;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8')) as ProgressContract;
  } catch (err) {
    throw new TbrlError('PROGRESS_CONTRACT_INVALID', `${path}: not a progress contract (${errorMessage(err)})`, 'regenerate the task with `tbrl synth` or fix the JSON.');
  }
  checkContract(parsed);
  return parsed;
}

export async function evaluateProgress(sandbox: Sandbox, task: Task, options: { appDir?: string; timeoutMs?: number } = {}): Promise<ProgressEvaluation | undefined> {
  const contractPath = await progressContractPath(task);
  if (!contractPath) return undefined;
  const contract = await loadProgressContract(task);
  if (!contract) return undefined;
  const grader = join(contractPath, '..', 'progress.py');
  const started = Date.now();
  const dir = `/tmp/.tbrl-progress-${randomBytes(6).toString('hex')}`;
  try {
    await sandbox.writeFile(`${dir}/progress.json`, await readFile(contractPath));
    await sandbox.writeFile(`${dir}/progress.py`, await readFile(grader), 0o700);
    const r = await sandbox.execArgv(['python3', `${dir}/progress.py`, '--root', options.appDir ?? '/app'], { timeoutMs: options.timeoutMs ?? 120_000 });
    if (r.exitCode !== 0) {
      throw new TbrlError('PROGRESS_GRADER_FAILED', `progress grader exited with ${r.exitCode}: ${r.output.slice(-400)}`, 'check that the task image has python3 and that tests/progress.py is the one tbrl synth wrote.');
    }
    const line = r.output.trim().split('\n').pop() ?? '';
    const printed = JSON.parse(line) as { phi: number; credit: Record<string, number> };
    // Gating and Φ are recomputed here from the raw credits, so a grader cannot report a Φ its credits do not give.
    const phi = potential(contract, printed.credit);
    return { phi, credit: printed.credit, gated: gatedCredit(contract, printed.credit), durationMs: Date.now() - started };
  } finally {
    await sandbox.execArgv(['rm', '-rf', dir]).catch(() => undefined);
  }
}
