import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { FORMAT_FLAGS, formatFromFlag, formatFlagsSentence } from '../../core/tasks/formats';
import { DOMAINS } from '../../core/synth/domains';
import { synthesizeBatch } from '../../core/synth/batch';
import { SCALE_TIERS, type ScaleTier } from '../../core/synth/types';
import { formatCoverageTable } from '../../core/synth/coverage';
import { runDecontam } from './synth-decontam';

export const synthCommand: CliCommand = {
  name: 'synth',
  summary: 'Synthesise Tev tasks (latent world, faults, progress contract) that pass every generation gate',
  usage: [
    `synth --domain D[,D2...|all] --tier T --seed S [--count K] [--format ${FORMAT_FLAGS.join('|')}] [--fault-count N] [--dry-run] <out>`,
    'synth decontam CORPUS --against TASKS [--json]   (see `tbrl synth decontam --help`)',
    '',
    `Domains: ${Object.keys(DOMAINS).join(', ')} (a comma list or "all" mixes them: task k uses the k-th, cyclically). Tiers: ${SCALE_TIERS.join(', ')}.`,
    'Prints the coverage table of the corpus (19 axes) at the end. --dry-run generates, labels and runs',
    'the static gates only, and writes no task.',
    'Writes tasks for seeds S..S+K-1 into <out>/<task-id>/, each with its progress contract',
    '(tests/progress.json + tests/progress.py) and gate results (tests/gates.json), and',
    '<out>/synth-report.json. Tasks that fail a gate are reported and not written.',
    'Gates run on this machine with python3 (and pytest) in a temporary directory.',
    '--fault-count N: N of the six shared fault classes (default: 2 unit, 4 small, 6 full), plus the',
    "domain's own classes: unit drift when N is 7, and its second class (timezone skew, a stale",
    'unlisted shard, replayed records, a deprecated key, a negated measure, qualified ids, compact',
    'dates) when N is 8; by default the small and full tiers add both.',
  ].join('\n'),
  options: {
    domain: { type: 'string' },
    tier: { type: 'string', default: 'unit' },
    seed: { type: 'string', default: '1' },
    count: { type: 'string', default: '1' },
    format: { type: 'string', default: 'tb' },
    'fault-count': { type: 'string' },
    'dry-run': { type: 'boolean', default: false },
    against: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
  async run({ positionals, values }) {
    if (positionals[0] === 'decontam') return runDecontam(positionals.slice(1), values);
    if (positionals.length !== 1) throw new UsageError('give exactly one output directory, e.g. `tbrl synth --domain data-eng --tier unit --seed 1 tasks/tev`.');
    const raw = values.domain as string | undefined;
    const domains = raw === 'all' ? Object.keys(DOMAINS) : (raw ?? '').split(',').map((d) => d.trim()).filter(Boolean);
    const unknown = domains.filter((d) => !DOMAINS[d]);
    if (domains.length === 0 || unknown.length > 0) throw new UsageError(`--domain must be one of ${Object.keys(DOMAINS).join(', ')} (or a comma list, or all)${unknown.length ? `, not "${unknown.join(', ')}"` : ''} (e.g. --domain data-eng).`);
    const domain = domains[0];
    const tier = values.tier as ScaleTier;
    if (!SCALE_TIERS.includes(tier)) throw new UsageError(`--tier must be one of ${SCALE_TIERS.join(', ')}, not "${String(values.tier)}".`);
    const seed = integer('seed', values.seed, 0, 0xffffffff);
    const count = integer('count', values.count, 1, 1000);
    const faultCount = values['fault-count'] === undefined ? undefined : integer('fault-count', values['fault-count'], 0, 8);
    const format = formatFromFlag(values.format);
    if (!format) throw new UsageError(`--format must be ${formatFlagsSentence()}, not "${String(values.format)}".`);
    const { entries, reportPath, coverage } = await synthesizeBatch(positionals[0], {
      domain,
      domains,
      dryRun: values['dry-run'] === true,
      tier,
      seed,
      count,
      faultCount,
      format,
      onTask: (t, report) => {
        const head = `${t.id}: horizon ${t.workflow.horizon} stages / ${t.workflow.horizonWorkload} est. actions, ${t.workflow.difficulty}, faults ${t.labels.faultClasses.join(', ') || 'none'}`;
        const verb = values['dry-run'] === true ? 'static gates passed (dry run, not written)' : 'written';
        console.log(report.passed ? `${head}: ${verb} (gates ${(report.durationMs / 1000).toFixed(1)}s)` : `${head}: REJECTED, not written: ${report.gates.filter((g) => !g.passed).map((g) => `${g.name}: ${g.detail}`).join(' | ')}`);
      },
    });
    const ok = entries.filter((e) => e.passed).length;
    console.log(`\n${formatCoverageTable(coverage, entries.length)}`);
    console.log(`\n${ok}/${count} task(s) passed every gate${values['dry-run'] === true ? ' (static gates only)' : ''}; report: ${reportPath}`);
    return ok === count ? 0 : 1;
  },
};

function integer(name: string, raw: unknown, lo: number, hi: number): number {
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || n < lo || n > hi) throw new UsageError(`--${name} must be an integer from ${lo} to ${hi}, not "${String(raw)}".`);
  return n;
}
