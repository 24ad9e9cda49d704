import { resolve } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { compareJobs, loadJob } from '../../core/eval/compare';
import { formatComparison } from '../../core/eval/format';

export const evalCompareCommand: CliCommand = {
  name: 'eval compare',
  summary: 'Compare eval jobs: per-task pass rates, differences with a bootstrap CI, flipped tasks',
  usage: 'eval compare JOB_A JOB_B... [--seed N] [--resamples N] [--json]',
  options: { seed: { type: 'string' }, resamples: { type: 'string' }, json: { type: 'boolean' } },
  async run({ positionals, values }) {
    if (positionals.length < 2) throw new UsageError('compare needs at least two job directories');
    const seed = values.seed === undefined ? 0 : Number(values.seed);
    const resamples = values.resamples === undefined ? 2000 : Number(values.resamples);
    if (!Number.isInteger(seed)) throw new UsageError(`--seed must be a whole number, not "${String(values.seed)}"`);
    if (!Number.isInteger(resamples) || resamples < 100) throw new UsageError(`--resamples must be a whole number ≥ 100, not "${String(values.resamples)}"`);
    const comparison = compareJobs(positionals.map((p) => loadJob(resolve(p))), { seed, resamples });
    console.log(values.json === true ? JSON.stringify(comparison, null, 2) : formatComparison(comparison));
    return 0;
  },
};
