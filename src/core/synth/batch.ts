import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { WritableFormat } from '../tasks/write';
import { runGates, type GateOptions, type GateReport } from './gates';
import { synthesize, type CoverageLabels, type SynthesizedTask, type SynthOptions } from './generate';
import { stableReport, writeSynthesizedTask } from './write';

export interface BatchEntry extends Omit<GateReport, 'durationMs'> { labels: CoverageLabels; written?: string }

export interface BatchOptions extends Omit<SynthOptions, 'seed'> {
  seed: number;
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
export async function synthesizeBatch(outDir: string, options: BatchOptions): Promise<{ entries: BatchEntry[]; reportPath: string }> {
  const out = resolve(outDir);
  await mkdir(out, { recursive: true });
  const taken = new Set(await readdir(out));
  const entries: BatchEntry[] = [];
  for (let k = 0; k < options.count; k++) {
    const t = synthesize({ domain: options.domain, tier: options.tier, seed: options.seed + k, faultCount: options.faultCount });
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
  await writeFile(reportPath, JSON.stringify({ ...shown, tasks: entries }, null, 2) + '\n');
  return { entries, reportPath };
}
