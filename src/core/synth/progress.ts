import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { RewardRecord, StepRecord } from '../trajectory/schema';
import { checkContract, gatedCredit, potential, pprsReward, PPRS_LAMBDA, type ProgressContract } from './contract';

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

/**
 * Per-step Φ for the run loop. `onStep` sets `step.phi` (awaited by the loop before the step is
 * written); `finish` turns the test reward into PPRS, R = 1[pass] + λ·Φ(s_T). For tasks without
 * a progress contract both are no-ops, so the run loop can always install the recorder.
 */
export interface ProgressRecorder {
  /** Whether the task has a progress contract (known after the first call). */
  enabled(): Promise<boolean>;
  onStep(step: StepRecord): Promise<void>;
  /** Φ of the final state: the last step's Φ, or a fresh evaluation when no step ran. */
  finalPhi(): Promise<number | undefined>;
  finish(reward: RewardRecord): Promise<RewardRecord>;
}

export function createProgressRecorder(sandbox: Sandbox, task: Task, options: { onError?: (message: string) => void } = {}): ProgressRecorder {
  let contract: Promise<ProgressContract | undefined> | undefined;
  let last: number | undefined;
  const has = async () => (await (contract ??= loadProgressContract(task))) !== undefined;
  const measure = async (): Promise<number | undefined> => {
    try {
      return (await evaluateProgress(sandbox, task))?.phi;
    } catch (err) {
      // A failing grader must not end the run: the step is kept without Φ and the problem reported.
      options.onError?.(`progress grader: ${errorMessage(err)}`);
      return undefined;
    }
  };
  return {
    enabled: has,
    async onStep(step) {
      if (!(await has())) return;
      const phi = await measure();
      if (phi !== undefined) step.phi = last = phi;
    },
    async finalPhi() {
      if (!(await has())) return undefined;
      return last ?? (last = await measure());
    },
    async finish(reward) {
      const phi = await this.finalPhi();
      return phi === undefined ? reward : applyPprs(reward, phi);
    },
  };
}

/** PPRS on a test reward: pass means every weighted test passed (tests score 1). */
export function applyPprs(reward: RewardRecord, phi: number, lambda = PPRS_LAMBDA): RewardRecord {
  const r = pprsReward(reward.tests === 1 && !reward.testError, phi, lambda);
  return { ...reward, pprs: { pass: r.pass, phi: r.phi, lambda: r.lambda }, total: r.total };
}
