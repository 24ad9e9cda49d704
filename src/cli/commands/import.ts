import { writeFile } from 'node:fs/promises';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { importTbrlCsv, type ImportRowReport } from '../../core/tasks/import-csv';

const SOURCES = ['tbrl-csv'];

function rowLine(r: ImportRowReport): string {
  const mark = r.status === 'written' ? 'ok  ' : r.status === 'written-with-problems' ? 'warn' : r.status === 'skipped' ? 'skip' : 'FAIL';
  return `${mark} line ${String(r.line).padStart(4)}  ${r.taskId ?? '(no task_id)'}`;
}

export const importCommand: CliCommand = {
  name: 'import',
  summary: 'Import tasks from another dataset format (tbrl-csv: the Terminal-Bench-RL dataset CSV)',
  usage: [
    'import tbrl-csv <file.csv> <out-dir> [--json report.json] [--verbose]',
    '',
    'Each row becomes a Terminal-Bench task directory <out-dir>/<task_id>. A per-row report says what',
    'was written, what failed and why. Existing task directories are left untouched.',
  ].join('\n'),
  options: {
    json: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
  async run({ positionals, values }) {
    const [source, file, out] = positionals;
    if (!source || !SOURCES.includes(source)) throw new UsageError(`the first argument names the source format: ${SOURCES.join(', ')}.`);
    if (!file || !out || positionals.length !== 3) throw new UsageError('give the CSV file and the output directory, e.g. `tbrl import tbrl-csv dataset.csv tasks/`.');
    const report = await importTbrlCsv(file, out, {
      onRow: (r) => {
        console.log(rowLine(r));
        const shown = r.status === 'written' && !values.verbose ? [] : r.problems;
        for (const p of shown) console.log(`        ${p.split('\n')[0]}`);
      },
    });
    console.log(`\n${report.written} written, ${report.failed} failed, ${report.skipped} skipped (of ${report.rows.length} rows) into ${report.outDir}`);
    if (typeof values.json === 'string') {
      await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
      console.log(`Report: ${values.json}`);
    }
    return report.failed > 0 ? 1 : 0;
  },
};
