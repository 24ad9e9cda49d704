// Compatibility corpus runner: validates every task folder under a directory (static checks, image
// build, reference solution scores 1, an agent that does nothing scores below 1) and prints one row
// per task with the outcome class and a one-line root cause of each failure.
//
//   node --import tsx scripts/corpus/run.mjs <dir-of-tasks> [--concurrency 1] [--json out.json] [--md]
//
// The tasks themselves are never committed: fetch them with scripts/corpus/fetch-tb1.sh.
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { validateTasks } from '../../src/core/tasks/validate.ts';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { concurrency: { type: 'string', default: '1' }, json: { type: 'string' }, md: { type: 'boolean' }, oracle: { type: 'string', default: 'script' } } });
if (positionals.length !== 1) {
  console.error('usage: node --import tsx scripts/corpus/run.mjs <dir-of-tasks> [--concurrency N] [--json out.json] [--md]');
  process.exit(2);
}
const root = resolve(positionals[0]);
const dirs = readdirSync(root).map((d) => join(root, d)).filter((d) => statSync(d).isDirectory()).sort();
const started = Date.now();
const results = await validateTasks(dirs, {
  provider: new DockerSandboxProvider(),
  concurrency: Number(values.concurrency),
  oracle: values.oracle,
  onProgress: (e) => { if (e.type === 'done') console.error(`[${e.completed}/${e.total}] ${e.path.split('/').pop()}: ${e.result.valid ? 'valid' : 'invalid'} (${(e.result.durationMs / 1000).toFixed(0)} s)`); },
});

const oneLine = (s) => (s ?? '').split('\n').map((l) => l.trim()).find(Boolean)?.replace(/\|/g, '\\|').slice(0, 220) ?? '';
/** The outcome class and root cause of the first thing that went wrong, in the order a run meets them. */
function rootCause(r) {
  if (r.load.status === 'failed') return ['invalid task', oneLine(r.load.message)];
  if (r.build.status === 'failed') return ['environment_error', oneLine(r.build.message)];
  if (r.oracle.status === 'failed') return [r.oracle.outcome ?? 'failed', `reference: ${withLastLine(r.oracle.message)}`];
  if (r.empty.status === 'failed') return [r.empty.outcome ?? 'failed', `empty agent: ${oneLine(r.empty.message)}`];
  if (r.static.status === 'failed') return ['invalid task', `static: ${oneLine(r.problems[0])}`];
  return ['', ''];
}
/** "the reference solution exited with 1:" says little alone: add the output's last line. */
const withLastLine = (s) => {
  const lines = (s ?? '').split('\n').map((l) => l.trim()).filter(Boolean);
  return oneLine(lines.length > 1 && lines[0].endsWith(':') ? `${lines[0]} ${lines[lines.length - 1]}` : lines[0]);
};
const mark = (s) => (s === 'passed' ? 'yes' : s === 'failed' ? 'no' : '-');
const rows = results.map((r) => {
  const [outcome, cause] = rootCause(r);
  return {
    task: r.id ?? r.path.split('/').pop(),
    loaded: mark(r.load.status),
    built: mark(r.build.status) + (r.build.substitutedFrom ? ` (stand-in for ${r.build.substitutedFrom})` : ''),
    reference: mark(r.oracle.status),
    emptyFails: mark(r.empty.status),
    outcome: outcome || (r.valid ? 'passed' : ''),
    cause,
  };
});
const header = ['task', 'loaded', 'built', 'reference passes', 'empty agent fails', 'outcome', 'root cause'];
const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${[r.task, r.loaded, r.built, r.reference, r.emptyFails, r.outcome, r.cause].join(' | ')} |`)];
console.log(lines.join('\n'));
const count = (f) => rows.filter(f).length;
console.log(`\n${rows.length} tasks: loaded ${count((r) => r.loaded === 'yes')}, built ${count((r) => r.built.startsWith('yes'))}, reference passes ${count((r) => r.reference === 'yes')}, empty agent fails ${count((r) => r.emptyFails === 'yes')}; ${((Date.now() - started) / 60000).toFixed(1)} min`);
if (values.json) writeFileSync(values.json, JSON.stringify({ rows, results }, null, 1) + '\n');
