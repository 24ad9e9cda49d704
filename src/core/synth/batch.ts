import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { WritableFormat } from '../tasks/write';
import { runGates, staticGates, type GateOptions, type GateReport } from './gates';
import { synthesize, type CoverageLabels, type SynthesizedTask, type SynthOptions } from './generate';
import { stableReport, writeSynthesizedTask } from './write';
import { coverageTable, type CoverageRow } from './coverage';

export interface BatchEntry extends Omit<GateReport, 'durationMs'> { labels: CoverageLabels; written?: string }

export interface BatchOptions extends Omit<SynthOptions, 'seed'> {
  seed: number;
  /** A mix of domains: task k uses domains[k % domains.length] (overrides `domain`). */
  domains?: string[];
  /** Generate, label and run the static gates only; write no task (coverage of a corpus plan). */
  dryRun?: boolean;
  count: number;
  format: WritableFormat;
  gates?: GateOptions;
  /** Called with each task before its gates run (tests use it to break a generator on purpose). */
  mutate?: (t: SynthesizedTask) => void;
  /** Called before a task's gates run (they take seconds to a minute: progress must not go quiet). */
  onStart?: (t: SynthesizedTask, index: number) => void;
  onTask?: (t: SynthesizedTask, report: GateReport) => void;
}

/**
 * Synthesise seeds seed..seed+count-1, gate each, write the ones that pass every gate into
 * out/<task-id>/ and a report of all of them into out/synth-report.json.
 */
export async function synthesizeBatch(outDir: string, options: BatchOptions): Promise<{ entries: BatchEntry[]; reportPath: string; coverage: CoverageRow[] }> {
  const out = resolve(outDir);
  await mkdir(out, { recursive: true });
  const taken = new Set(await readdir(out));
  const entries: BatchEntry[] = [];
  for (let k = 0; k < options.count; k++) {
    const domain = options.domains && options.domains.length > 0 ? options.domains[k % options.domains.length] : options.domain;
    const t = synthesize({ domain, tier: options.tier, seed: options.seed + k, faultCount: options.faultCount });
    if (options.dryRun) {
      const started = Date.now();
      const gates = staticGates(t);
      const report: GateReport = { task: t.id, passed: gates.every((g) => g.passed), gates, referencePhi: [], probes: [], durationMs: Date.now() - started };
      options.onTask?.(t, report);
      entries.push({ ...stableReport(report), labels: t.labels });
      continue;
    }
    if (taken.has(t.id)) throw new TbrlError('SYNTH_OUT_EXISTS', `${join(out, t.id)} already exists`, 'choose another output directory or seed; tasks are never overwritten.');
    options.mutate?.(t);
    options.onStart?.(t, k);
    const report = await runGates(t, options.gates);
    options.onTask?.(t, report);
    const written = report.passed ? (await writeSynthesizedTask(t, join(out, t.id), options.format, report)).dir : undefined;
    entries.push({ ...stableReport(report), labels: t.labels, ...(written ? { written } : {}) });
  }
  const reportPath = join(out, 'synth-report.json');
  const { mutate: _m, onStart: _s, onTask: _o, gates: _g, ...shown } = options;
  void _m; void _s; void _o; void _g;
  const coverage = coverageTable(entries.map((e) => e.labels));
  await writeFile(reportPath, JSON.stringify({ ...shown, coverage, tasks: entries }, null, 2) + '\n');
  return { entries, reportPath, coverage };
}
