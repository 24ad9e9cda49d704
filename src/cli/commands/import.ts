import { writeFile } from 'node:fs/promises';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { FORMAT_FLAGS, formatFromFlag, formatFlagsSentence, requireTaskFormat } from '../../core/tasks/formats';
import { importTbrlCsv, type ImportRowReport } from '../../core/tasks/import-csv';
import { convertTask } from '../../core/tasks/convert';

const SOURCES = ['tbrl-csv', 'task'];

function rowLine(r: ImportRowReport): string {
  const mark = r.status === 'written' ? 'ok  ' : r.status === 'written-with-problems' ? 'warn' : r.status === 'skipped' ? 'skip' : 'FAIL';
  return `${mark} line ${String(r.line).padStart(4)}  ${r.taskId ?? '(no task_id)'}`;
}

export const importCommand: CliCommand = {
  name: 'import',
  summary: 'Import tasks: the Terminal-Bench-RL dataset CSV, or one task converted to Terminal-Bench or Harbor',
  usage: [
    'import tbrl-csv <file.csv> <out-dir> [--json report.json] [--verbose]',
    `import task <task-dir> <out-dir> --format ${FORMAT_FLAGS.join('|')}`,
    '',
    'tbrl-csv: each row becomes a Terminal-Bench task directory <out-dir>/<task_id>. A per-row report',
    'says what was written, what failed and why. Existing task directories are left untouched.',
    'task: writes a Terminal-Bench 1.x or Harbor task in the other format and lists what the target',
    'format cannot carry (converting back restores it).',
  ].join('\n'),
  options: {
    json: { type: 'string' },
    verbose: { type: 'boolean', default: false },
    format: { type: 'string' },
  },
  async run({ positionals, values }) {
    const [source, file, out] = positionals;
    if (!source || !SOURCES.includes(source)) throw new UsageError(`the first argument names the source: ${SOURCES.join(', ')}.`);
    if (source === 'task') {
      if (!file || !out || positionals.length !== 3) throw new UsageError('give the task directory and the output directory, e.g. `tbrl import task tasks/a out/a --format harbor`.');
      const format = formatFromFlag(values.format);
      if (!format) throw new UsageError(`--format must be ${formatFlagsSentence()} (the format to write).`);
      const result = await convertTask(file, out, format);
      console.log(`Wrote a ${requireTaskFormat(format).label} task to ${result.dir}`);
      for (const w of result.warnings) console.log(`  note: ${w}`);
      return 0;
    }
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
