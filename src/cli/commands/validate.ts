import { allowListFrom } from '../../core/tasks/confine';
import { writeFile } from 'node:fs/promises';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { DockerSandboxProvider } from '../../core/sandbox/provider';
import { validateTasks, type StageStatus, type TaskValidation } from '../../core/tasks/validate';
import { recordValidations } from '../../core/tasks/validation-record';
import { errorMessage } from '../../core/errors';

const mark = (s: StageStatus) => (s === 'passed' ? 'ok' : s === 'failed' ? 'FAIL' : '-');
const score = (s: { status: StageStatus; score?: number }) => (s.score !== undefined ? `${mark(s.status)} ${+s.score.toFixed(3)}` : mark(s.status));

/** A fixed-width table: one row per task, then the problems of the invalid ones. */
export function renderValidationTable(results: TaskValidation[]): string {
  const header = ['task', 'format', 'valid', 'static', 'tev', 'build', 'oracle', 'empty', 'time'];
  const rows = results.map((r) => [
    r.id ?? r.path,
    r.format ?? '?',
    r.valid ? 'yes' : 'NO',
    mark(r.static.status),
    mark(r.tev.status),
    mark(r.build.status),
    score(r.oracle),
    score(r.empty),
    `${(r.durationMs / 1000).toFixed(1)}s`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  const out = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  for (const r of results) {
    if (r.problems.length === 0 && r.warnings.length === 0) continue;
    out.push('', `${r.id ?? r.path}:`);
    for (const p of r.problems) out.push(`  error: ${p.split('\n')[0]}`);
    for (const w of r.warnings) out.push(`  warning: ${w.split('\n')[0]}`);
  }
  return out.join('\n');
}

export const validateCommand: CliCommand = {
  name: 'validate',
  summary: 'Check tasks: static checks, image build, oracle scores 1, an empty agent scores below 1',
  usage: [
    'validate <task-dir...> [--concurrency N] [--json out.json] [--static-only] [--oracle policy|script] [--record DIR|none]',
    '         [--allow-privilege KEY...]   accept compose keys such as cap_add that are refused by default',
    '',
    'Runs tasks in parallel (default 2 at a time). Exit code 1 when any task is invalid.',
    'The reference solution runs as the oracle policy through the agent loop (like `tbrl run --policy',
    "oracle`); --oracle script runs it directly in the container, as Terminal-Bench's oracle agent does.",
    'Each result is kept in DIR/.tbrl/validations.json (default DIR: the current directory), which the',
    "editor's Tasks view shows; --record none keeps nothing.",
  ].join('\n'),
  options: {
    concurrency: { type: 'string', default: '2' },
    json: { type: 'string' },
    'static-only': { type: 'boolean', default: false },
    oracle: { type: 'string', default: 'policy' },
    record: { type: 'string', default: '.' },
    'allow-privilege': { type: 'string', multiple: true },
  },
  async run({ positionals, values }) {
    if (positionals.length === 0) throw new UsageError('name at least one task directory, e.g. `tbrl validate examples/hello-world`.');
    const concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a whole number >= 1, not "${String(values.concurrency)}".`);
    const staticOnly = values['static-only'] === true;
    const oracle = values.oracle;
    if (oracle !== 'policy' && oracle !== 'script') throw new UsageError(`--oracle must be policy or script, not "${String(oracle)}".`);
    const total = positionals.length;
    const results = await validateTasks(positionals, {
      concurrency,
      staticOnly,
      oracle,
      allowPrivileges: allowListFrom(values['allow-privilege']),
      provider: staticOnly ? undefined : new DockerSandboxProvider(),
      onProgress: (e) => {
        if (e.type === 'stage') console.error(`  ${e.path}: ${e.message}`);
        if (e.type === 'done') console.error(`[${e.completed}/${total}] ${e.path}: ${e.result.valid ? 'valid' : 'INVALID'}`);
      },
    });
    console.log(renderValidationTable(results));
    if (values.record !== 'none') {
      try {
        console.error(`Recorded in ${recordValidations(String(values.record), results)}`);
      } catch (err) {
        // The results are printed already; a read-only workspace must not turn them into a failure.
        console.error(`warning: the results were not recorded: ${errorMessage(err)}`);
      }
    }
    if (typeof values.json === 'string') {
      await writeFile(values.json, `${JSON.stringify({ valid: results.every((r) => r.valid), tasks: results }, null, 2)}\n`);
      console.log(`\nJSON: ${values.json}`);
    }
    return results.every((r) => r.valid) ? 0 : 1;
  },
};
