import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors';
import type { Task } from '../tasks/model';
import { runGates } from './gates';
import { synthesize, SYNTH_RECIPE_FILE, type SynthOptions } from './generate';
import { SCALE_TIERS } from './types';

export interface TevValidation {
  status: 'passed' | 'failed';
  message?: string;
  gates?: number;
  probes?: number;
}

/** The hidden programs the gates vouch for; an edit to any of them voids the generation-time gates. */
const GATED_FILES = ['tests/progress.py', 'tests/progress.json', 'tests/test_outputs.py'];

/** Whether a loaded task is a Tev task (it carries a progress contract next to its tests). */
export function isTevTask(task: Task): boolean {
  return existsSync(join(task.tests.dir, 'progress.json'));
}

/**
 * Re-runs the Tev generation gates for an existing task: the task is regenerated from its recipe
 * (tests/synth.json), its gated programs must be byte-identical to the regenerated ones (otherwise
 * the gates would vouch for code that is not there), then every gate runs again on the host.
 */
export async function revalidateTevTask(task: Task, options: { python?: string } = {}): Promise<TevValidation> {
  const recipePath = join(task.tests.dir, 'synth.json');
  if (!existsSync(recipePath)) {
    return { status: 'failed', message: `${SYNTH_RECIPE_FILE} is missing, so the generation gates cannot be re-run. Fix: regenerate the task with \`tbrl synth\` (it writes the recipe).` };
  }
  let recipe: SynthOptions;
  try {
    const raw = JSON.parse(await readFile(recipePath, 'utf8')) as Partial<SynthOptions>;
    if (typeof raw.domain !== 'string' || !SCALE_TIERS.includes(raw.tier as never) || !Number.isInteger(raw.seed)) throw new Error('needs {"domain": string, "tier": unit|small|full, "seed": integer, "faultCount"?: integer}');
    recipe = { domain: raw.domain, tier: raw.tier!, seed: raw.seed!, ...(raw.faultCount !== undefined ? { faultCount: raw.faultCount } : {}) };
  } catch (err) {
    return { status: 'failed', message: `${SYNTH_RECIPE_FILE}: ${errorMessage(err)}` };
  }
  let regenerated;
  try {
    regenerated = synthesize(recipe);
  } catch (err) {
    return { status: 'failed', message: `regenerating from ${SYNTH_RECIPE_FILE} failed: ${errorMessage(err)}` };
  }
  for (const file of GATED_FILES) {
    const onDisk = await readFile(join(task.tests.dir, file.replace(/^tests\//, '')), 'utf8').catch(() => undefined);
    if (onDisk !== regenerated.taskFiles[file]) {
      return { status: 'failed', message: `${file} differs from what ${recipe.domain}/${recipe.tier}/seed ${recipe.seed} generates, so the generation gates no longer vouch for it. Fix: regenerate with \`tbrl synth\` instead of editing the hidden programs.` };
    }
  }
  const report = await runGates(regenerated, { python: options.python });
  const failedGates = report.gates.filter((g) => !g.passed);
  const passingProbes = report.probes.filter((p) => p.verifierPassed || p.phi >= 1);
  if (!report.passed) {
    const what = [...failedGates.map((g) => `${g.name}: ${g.detail}`), ...passingProbes.map((p) => `probe ${p.name} not rejected`)];
    return { status: 'failed', message: `Tev gates failed: ${what.join('; ') || 'see the gate report'}`, gates: report.gates.length, probes: report.probes.length };
  }
  return { status: 'passed', gates: report.gates.length, probes: report.probes.length };
}
