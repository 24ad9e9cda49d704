import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { DOMAINS } from '../../core/synth/domains';
import { synthesize } from '../../core/synth/generate';
import { runGates, type GateReport } from '../../core/synth/gates';
import { SCALE_TIERS, type ScaleTier } from '../../core/synth/types';
import { stableReport, writeSynthesizedTask } from '../../core/synth/write';

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
    const out = resolve(positionals[0]);
    await mkdir(out, { recursive: true });
    const taken = new Set(await readdir(out));

    const reports: Array<Omit<GateReport, 'durationMs'> & { written?: string; labels: unknown }> = [];
    for (let k = 0; k < count; k++) {
      const t = synthesize({ domain, tier, seed: seed + k, faultCount });
      if (taken.has(t.id)) throw new UsageError(`${join(out, t.id)} already exists; choose another output directory or seed.`);
      process.stdout.write(`${t.id}: horizon ${t.workflow.horizon}, ${t.workflow.difficulty}, faults ${t.labels.faultClasses.join(', ') || 'none'} ... `);
      const report = await runGates(t);
      let written: string | undefined;
      if (report.passed) written = (await writeSynthesizedTask(t, join(out, t.id), format, report)).dir;
      console.log(report.passed ? `written (${(report.durationMs / 1000).toFixed(1)}s)` : `REJECTED: ${report.gates.filter((g) => !g.passed).map((g) => `${g.name}: ${g.detail}`).join(' | ')}`);
      reports.push({ ...stableReport(report), written, labels: t.labels });
    }
    await writeFile(join(out, 'synth-report.json'), JSON.stringify({ domain, tier, seed, count, format, tasks: reports }, null, 2) + '\n');
    const ok = reports.filter((r) => r.passed).length;
    console.log(`\n${ok}/${count} task(s) passed every gate; report: ${join(out, 'synth-report.json')}`);
    return ok === count ? 0 : 1;
  },
};

function integer(name: string, raw: unknown, lo: number, hi: number): number {
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || n < lo || n > hi) throw new UsageError(`--${name} must be an integer from ${lo} to ${hi}, not "${String(raw)}".`);
  return n;
}
