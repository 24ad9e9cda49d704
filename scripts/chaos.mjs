// The reliability and security suite (issue 10): runs test/chaos/*.test.ts one file at a time
// (they fight over the same 2 cores and Docker daemon on purpose, but not with each other), then
// the leak check in test/chaos/after/, and prints one table row per case: what was tried, what
// should happen, what did, pass/fail. Closing line: `N passed, N failed`.
// With TBRL_CHAOS_EMBEDDED=<file> (scripts/test.mjs) the counts also go to that file as JSON and
// the closing line reads `chaos: N passed, N failed`, so the outer runner keeps the only total.
// Usage: node scripts/chaos.mjs [name-filter ...]   e.g. node scripts/chaos.mjs containment
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const filters = process.argv.slice(2);
// Files run one at a time (--test-concurrency=1), so no case competes with another case's load.
const files = readdirSync('test/chaos')
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .map((f) => join('test/chaos', f));

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-'));
const rowsFile = join(scratch, 'rows.jsonl');
let passed = 0;
let failed = 0;
let failedRuns = 0;
const started = Date.now();

function run(label, list) {
  if (list.length === 0) return;
  const tap = join(scratch, `${label}.tap`);
  console.log(`\n=== chaos ${label}: ${list.length} file(s) ===`);
  const r = spawnSync(process.execPath, [
    '--import', 'tsx', '--test', '--test-concurrency=1',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...list,
  ], { stdio: 'inherit', env: { ...process.env, TBRL_TEST: '1', TBRL_CHAOS_ROWS: rowsFile } });
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const count = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
  passed += count('pass');
  failed += count('fail') + count('cancelled');
  if (r.status !== 0) failedRuns++;
}

run('cases', files);
// The leak check reads the run ids the cases recorded, so it needs the rows of every file above.
if (filters.length === 0 || filters.includes('after')) run('after', [join('test/chaos/after', 'no-leftovers.test.ts')]);

const records = existsSync(rowsFile) ? readFileSync(rowsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
const rows = records.filter((r) => r.type === 'row');
const metrics = records.filter((r) => r.type === 'metric');

function table(head, rawBody) {
  // A literal | inside a cell (a fork bomb) would split the column.
  const body = rawBody.map((r) => r.map((c) => String(c).replaceAll('|', '\\|').replaceAll('\n', ' ')));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}
console.log('\n=== chaos table ===');
console.log(table(['#', 'area', 'tried', 'expected', 'what happened', 'result'],
  rows.map((r, i) => [i + 1, r.area, r.tried, r.expected, `${r.happened} (${(r.ms / 1000).toFixed(1)} s)`, r.ok ? 'PASS' : 'FAIL'])));
if (metrics.length) console.log(`\n${metrics.map((m) => `${m.name}: ${m.value}`).join('\n')}`);
const missing = passed + failed - rows.length;
if (missing > 0) console.log(`\n${missing} case(s) ended without a row (crashed or cancelled before reporting); see the output above.`);
console.log(`\nchaos wall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
rmSync(scratch, { recursive: true, force: true });

const embedded = process.env.TBRL_CHAOS_EMBEDDED;
if (embedded) writeFileSync(embedded, JSON.stringify({ passed, failed }));
console.log(`\n${embedded ? 'chaos: ' : ''}${passed} passed, ${failed} failed`);
process.exit(failed > 0 || failedRuns > 0 ? 1 : 0);
