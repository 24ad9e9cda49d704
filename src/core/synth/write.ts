import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Task } from '../tasks/model';
import { loadTask } from '../tasks/load';
import { renderTaskYaml, writeTask, type WritableFormat } from '../tasks/write';
import type { GateReport } from './gates';
import type { SynthesizedTask } from './generate';
import { scratchDir, writeFiles } from './host';
import { TIER_SCALE } from './types';

/** Where a task keeps its progress contract (and the grader next to it). */
export const PROGRESS_CONTRACT_FILE = 'tests/progress.json';

/**
 * Write a synthesised task with the task engineer's writers: the Terminal-Bench layout is rendered
 * to a staging directory, loaded back as a Task and written out in the requested format, so a Tev
 * task is exactly as portable as any other task.
 */
export async function writeSynthesizedTask(t: SynthesizedTask, outDir: string, format: WritableFormat, report?: GateReport): Promise<{ dir: string; warnings: string[] }> {
  const staging = await scratchDir('tbrl-synth-stage-');
  try {
    const dir = join(staging.dir, t.id);
    const task: Task = {
      id: t.id,
      dir,
      format: 'terminal-bench',
      instruction: t.instruction,
      difficulty: t.workflow.difficulty,
      category: t.spec.category,
      tags: ['tev', t.spec.name, t.labels.scale, ...t.labels.faultClasses],
      environment: { context: dir, dockerfile: 'Dockerfile' },
      agentTimeoutSec: 600 + 60 * TIER_SCALE[t.labels.scale].partitions,
      testTimeoutSec: 300,
      allowInternet: false,
      tests: { runner: join(dir, 'run-tests.sh'), dir: join(dir, 'tests'), kind: 'pytest-summary' },
      progressContract: PROGRESS_CONTRACT_FILE,
      extra: { metadata: { parser_name: 'pytest', run_tests_in_same_shell: false } },
    };
    await writeFiles(dir, { ...t.taskFiles, 'task.yaml': renderTaskYaml(task) });
    for (const p of ['run-tests.sh', 'solution.sh', 'tests/progress.py']) await chmod(join(dir, p), 0o755);
    const loaded = await loadTask(dir);
    const written = await writeTask({ ...loaded, progressContract: PROGRESS_CONTRACT_FILE }, outDir, format);
    if (report) await writeFile(join(written.dir, 'tests', 'gates.json'), JSON.stringify(stableReport(report), null, 2) + '\n');
    return written;
  } finally {
    await staging.dispose();
  }
}

/** The gate report without timings, so the same seed writes byte-identical files. */
export function stableReport(report: GateReport): Omit<GateReport, 'durationMs' | 'verifierRuns' | 'verifierComparisons'> {
  // How the gates ran (time, which verifier path) is not part of what they found.
  const { durationMs: _omit, verifierRuns: _runs, verifierComparisons: _comparisons, ...rest } = report;
  void _omit;
  void _runs;
  void _comparisons;
  return rest;
}
