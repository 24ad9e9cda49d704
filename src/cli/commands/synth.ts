import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { DOMAINS } from '../../core/synth/domains';
import { synthesizeBatch } from '../../core/synth/batch';
import { SCALE_TIERS, type ScaleTier } from '../../core/synth/types';

export const synthCommand: CliCommand = {
  name: 'synth',
  summary: 'Synthesise Tev tasks (latent world, faults, progress contract) that pass every generation gate',
  usage: [
    'synth --domain D --tier T --seed S [--count K] [--format harbor|tb] [--fault-count N] <out>',
    '',
    `Domains: ${Object.keys(DOMAINS).join(', ')}. Tiers: ${SCALE_TIERS.join(', ')}.`,
    'Writes tasks for seeds S..S+K-1 into <out>/<task-id>/, each with its progress contract',
    '(tests/progress.json + tests/progress.py) and gate results (tests/gates.json), and',
    '<out>/synth-report.json. Tasks that fail a gate are reported and not written.',
    'Gates run on this machine with python3 (and pytest) in a temporary directory.',
  ].join('\n'),
  options: {
    domain: { type: 'string' },
    tier: { type: 'string', default: 'unit' },
    seed: { type: 'string', default: '1' },
    count: { type: 'string', default: '1' },
    format: { type: 'string', default: 'tb' },
    'fault-count': { type: 'string' },
  },
  async run({ positionals, values }) {
    if (positionals.length !== 1) throw new UsageError('give exactly one output directory, e.g. `tbrl synth --domain data-eng --tier unit --seed 1 tasks/tev`.');
    const domain = values.domain as string | undefined;
    if (!domain || !DOMAINS[domain]) throw new UsageError(`--domain must be one of ${Object.keys(DOMAINS).join(', ')}${domain ? `, not "${domain}"` : ''} (e.g. --domain data-eng).`);
    const tier = values.tier as ScaleTier;
    if (!SCALE_TIERS.includes(tier)) throw new UsageError(`--tier must be one of ${SCALE_TIERS.join(', ')}, not "${String(values.tier)}".`);
    const seed = integer('seed', values.seed, 0, 0xffffffff);
    const count = integer('count', values.count, 1, 1000);
    const faultCount = values['fault-count'] === undefined ? undefined : integer('fault-count', values['fault-count'], 0, 6);
    const format = values.format === 'tb' || values.format === 'terminal-bench' ? 'terminal-bench' : values.format === 'harbor' ? 'harbor' : undefined;
    if (!format) throw new UsageError(`--format must be tb or harbor, not "${String(values.format)}".`);
    const { entries, reportPath } = await synthesizeBatch(positionals[0], {
      domain,
      tier,
      seed,
      count,
      faultCount,
      format,
      onTask: (t, report) => {
        const head = `${t.id}: horizon ${t.workflow.horizon}, ${t.workflow.difficulty}, faults ${t.labels.faultClasses.join(', ') || 'none'}`;
        console.log(report.passed ? `${head}: written (gates ${(report.durationMs / 1000).toFixed(1)}s)` : `${head}: REJECTED, not written: ${report.gates.filter((g) => !g.passed).map((g) => `${g.name}: ${g.detail}`).join(' | ')}`);
      },
    });
    const ok = entries.filter((e) => e.passed).length;
    console.log(`\n${ok}/${count} task(s) passed every gate; report: ${reportPath}`);
    return ok === count ? 0 : 1;
  },
};

function integer(name: string, raw: unknown, lo: number, hi: number): number {
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || n < lo || n > hi) throw new UsageError(`--${name} must be an integer from ${lo} to ${hi}, not "${String(raw)}".`);
  return n;
}
