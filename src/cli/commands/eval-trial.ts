import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { runTrial, type TrialSpec } from '../../core/eval/trial';
import { writeJsonAtomic, type JobRunConfig } from '../../core/eval/job';
import { writeTrialExports } from '../../core/eval/interop';

/** One trial of an eval job on a cluster node: what `tbrl eval --ray`'s Ray tasks run. Internal. */
export const evalTrialCommand: CliCommand = {
  name: 'eval-trial',
  // Not for people: `tbrl eval --ray` runs it on the nodes; `tbrl eval-trial --help` still explains it.
  hidden: true,
  summary: 'Run one trial of an eval job from a spec file (used by `tbrl eval --ray` on cluster nodes)',
  usage: 'eval-trial <spec.json>   (spec: { trial, attempt, retries, task, run, dir, node })',
  async run({ positionals }) {
    if (positionals.length !== 1) throw new UsageError('expected one spec file');
    const spec = JSON.parse(readFileSync(positionals[0], 'utf8')) as TrialSpec & { run: JobRunConfig; node?: string };
    const controller = new AbortController();
    process.on('SIGTERM', () => controller.abort('interrupted'));
    const record = await runTrial(spec, spec.run, {}, controller.signal, spec.node ?? 'ray');
    if (!record) return 130;
    writeJsonAtomic(join(spec.dir, 'trial.json'), record);
    await writeTrialExports(spec.dir, { exportAtif: true });
    return 0;
  },
};
