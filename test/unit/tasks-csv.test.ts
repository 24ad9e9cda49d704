import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { TbrlError } from '../../src/core/errors';
import { parseCsv, parseCsvObjects } from '../../src/core/tasks/csv';
import { importTbrlCsv, parseTags } from '../../src/core/tasks/import-csv';
import { loadTask } from '../../src/core/tasks/load';

const CSV = resolve(__dirname, '../fixtures/tasks/csv/tbrl-dataset-small.csv');
const scratchDirs: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tbrl-csv-'));
  scratchDirs.push(dir);
  return dir;
}
after(async () => {
  for (const d of scratchDirs) await rm(d, { recursive: true, force: true });
});

test('parseCsv: quotes, doubled quotes, embedded commas and newlines, CRLF, BOM, record lines', () => {
  const text = '\ufeffa,b,c\r\n1,"x, ""y""",3\r\n"multi\nline",,"end"\n\nlast,row,here';
  assert.deepEqual(parseCsv(text), [
    { line: 1, fields: ['a', 'b', 'c'] },
    { line: 2, fields: ['1', 'x, "y"', '3'] },
    { line: 3, fields: ['multi\nline', '', 'end'] },
    { line: 6, fields: ['last', 'row', 'here'] },
  ]);
});

test('parseCsv: an unclosed quote and text after a closing quote are errors with the line', () => {
  assert.throws(() => parseCsv('a,b\n1,"open\nstill open', 'f.csv'), (err: unknown) => err instanceof TbrlError && err.code === 'CSV_MALFORMED' && /f\.csv:2: a quoted field is never closed/.test(err.message));
  assert.throws(() => parseCsv('a,b\n1,"x"y\n', 'f.csv'), (err: unknown) => err instanceof TbrlError && /f\.csv:2: unexpected character "y" after a closing quote/.test(err.message));
});

test('parseCsv inverts an RFC 4180 writer for any fields (property)', () => {
  const quote = (f: string) => (/[",\r\n]/.test(f) || f === '' ? `"${f.replace(/"/g, '""')}"` : f);
  fc.assert(
    fc.property(fc.array(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', ',', '"', '\n', '\r', ' ', 'é') }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 6 }), (rows) => {
      const text = rows.map((r) => r.map(quote).join(',')).join('\r\n') + '\r\n';
      assert.deepEqual(parseCsv(text).map((r) => r.fields), rows);
    }),
    { numRuns: 300 },
  );
});

test('parseCsvObjects keys rows by the header and records each row width', () => {
  const { header, rows } = parseCsvObjects('task_id,prompt\nt1,"hi, there"\nt2\n');
  assert.deepEqual(header, ['task_id', 'prompt']);
  assert.deepEqual(rows.map((r) => [r.values, r.width]), [[{ task_id: 't1', prompt: 'hi, there' }, 2], [{ task_id: 't2', prompt: '' }, 1]]);
});

test('parseTags: pipes (Terminal-Bench-RL), JSON lists and commas', () => {
  assert.deepEqual(parseTags('bash| files |'), ['bash', 'files']);
  assert.deepEqual(parseTags('["a", "b c"]'), ['a', 'b c']);
  assert.deepEqual(parseTags('x,y'), ['x', 'y']);
  assert.deepEqual(parseTags('  '), []);
});

test('import tbrl-csv: per-row report says what was written, what failed and why', async () => {
  const out = await scratch();
  const text = await readFile(CSV, 'utf8');
  const lineOf = (id: string) => text.slice(0, text.indexOf(`\n${id},`) + 1).split('\n').length;
  const report = await importTbrlCsv(CSV, out);
  const byLine = report.rows.map((r) => ({ line: r.line, id: r.taskId, status: r.status, why: r.problems.join(' | ') }));
  assert.deepEqual(byLine.map((r) => [r.id, r.status]), [
    ['csv-hello', 'written'],
    ['csv-mismatch', 'written-with-problems'],
    ['csv-badjson', 'failed'],
    ['csv-noprompt', 'failed'],
    ['../escape', 'failed'],
    ['csv-hello', 'failed'],
    ['csv-escape-file', 'failed'],
  ]);
  assert.equal(byLine[0].line, 2);
  assert.equal(byLine[1].line, lineOf('csv-mismatch'), 'rows spanning lines report where they start');
  assert.match(byLine[1].why, /'test_b' names no test function/);
  assert.match(byLine[1].why, /sum to 0\.9/);
  assert.match(byLine[2].why, /not valid JSON/);
  assert.match(byLine[3].why, /empty required field: prompt/);
  assert.match(byLine[4].why, /not a safe directory name/);
  assert.match(byLine[5].why, /appears on an earlier row/);
  assert.match(byLine[6].why, /must stay inside the task/);
  assert.deepEqual([report.written, report.failed, report.skipped], [2, 5, 0]);
  // Failed rows leave nothing behind (no half-written or staging directories).
  assert.deepEqual((await readdir(out)).sort(), ['csv-hello', 'csv-mismatch']);
});

test('an imported task is a loadable Terminal-Bench task holding every column', async () => {
  const out = await scratch();
  await importTbrlCsv(CSV, out);
  const t = await loadTask(join(out, 'csv-hello'));
  assert.equal(t.format, 'terminal-bench');
  assert.equal(t.instruction, 'Write /app/hello.txt containing "Hello, <seed>!" where <seed> is the text of /app/data/seed.txt.\nEnd the file with a newline.');
  assert.equal(t.difficulty, 'hard');
  assert.equal(t.category, 'file-operations');
  assert.deepEqual(t.tags, ['bash', 'files']);
  assert.deepEqual(t.testWeights, { hello_exists: 0.4, hello_content: 0.6 });
  assert.deepEqual(t.extra.metadata, {
    parser_name: 'pytest',
    run_tests_in_same_shell: false,
    original_difficulty: 'extremely_hard',
    title: 'Say "hello", politely',
    use_case_category: 'basics',
    created_at: '2025-07-01T10:00:00Z',
    updated_at: '2025-07-02T10:00:00Z',
  });
  assert.equal(await readFile(join(out, 'csv-hello/data/seed.txt'), 'utf8'), 'world\n');
  assert.match(await readFile(join(out, 'csv-hello/Dockerfile'), 'utf8'), /^FROM ghcr\.io\/laude-institute\/t-bench\/python-3-13:20250620\nWORKDIR \/app\nCOPY data\/ \/app\/data\/\n$/);
  assert.match(await readFile(join(out, 'csv-hello/tests/test_outputs.py'), 'utf8'), /def test_hello_content\(\):\n {4}assert Path\("\/app\/hello\.txt"\)/);
  assert.ok(((await stat(join(out, 'csv-hello/run-tests.sh'))).mode & 0o111) !== 0, 'run-tests.sh is executable');
});

test('importing again skips existing tasks and leaves them untouched', async () => {
  const out = await scratch();
  await importTbrlCsv(CSV, out);
  await writeFile(join(out, 'csv-hello/marker'), 'mine');
  const again = await importTbrlCsv(CSV, out);
  assert.equal(again.rows[0].status, 'skipped');
  assert.equal(await readFile(join(out, 'csv-hello/marker'), 'utf8'), 'mine');
});

test('a CSV without the required columns is rejected with the header it found', async () => {
  const dir = await scratch();
  const file = join(dir, 'bad.csv');
  await writeFile(file, 'id,text\n1,hello\n');
  await assert.rejects(importTbrlCsv(file, join(dir, 'out')), (err: unknown) => err instanceof TbrlError && err.code === 'CSV_COLUMNS' && /missing columns task_id, prompt, dockerfile, test_functions \(found: id, text\)/.test(err.message));
});
