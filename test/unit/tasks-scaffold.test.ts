import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TbrlError } from '../../src/core/errors';
import { scaffoldTask, SCAFFOLD_BASE_IMAGE, SCAFFOLD_INSTRUCTION } from '../../src/core/tasks/scaffold';
import { loadTask } from '../../src/core/tasks/load';
import { staticCheckTask } from '../../src/core/tasks/static-checks';
import { validateTasks } from '../../src/core/tasks/validate';

const ROOT = resolve(__dirname, '../..');
const scratchDirs: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tbrl-scaffold-'));
  scratchDirs.push(dir);
  return dir;
}
after(async () => {
  for (const d of scratchDirs) await rm(d, { recursive: true, force: true });
});

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8', cwd: ROOT });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

for (const format of ['terminal-bench', 'harbor'] as const) {
  test(`scaffold (${format}) loads, is weighted, and passes the static checks`, async () => {
    const dir = join(await scratch(), `my-${format}`);
    const r = await scaffoldTask(dir, { format, author: { name: 'Ann' } });
    const t = await loadTask(r.dir);
    assert.equal(t.format, format);
    assert.equal(t.instruction, SCAFFOLD_INSTRUCTION);
    assert.deepEqual(t.author, { name: 'Ann' });
    assert.ok('context' in t.environment);
    const dockerfile = await readFile(join(t.environment.context, t.environment.dockerfile), 'utf8');
    assert.ok(dockerfile.startsWith(`FROM ${SCAFFOLD_BASE_IMAGE}\n`));
    assert.equal(Object.values(t.testWeights ?? {}).reduce((a, b) => a + b, 0), 1);
    assert.equal(t.solution?.kind, 'script');
    assert.deepEqual(await staticCheckTask(t), []);
  });
}

test('scaffold with a custom instruction keeps it verbatim and refuses a non-empty directory', async () => {
  const dir = join(await scratch(), 'custom');
  await scaffoldTask(dir, { format: 'harbor', instruction: 'Compress /app/logs into /app/logs.tar.gz.' });
  assert.equal((await loadTask(dir)).instruction, 'Compress /app/logs into /app/logs.tar.gz.');
  await assert.rejects(scaffoldTask(dir), (err: unknown) => err instanceof TbrlError && err.code === 'TASK_WRITE_NOT_EMPTY');
});

test('validateTasks --static-only: reports per task, flags mismatched weights and leaks, runs with a concurrency limit', async () => {
  const base = await scratch();
  await scaffoldTask(join(base, 'good'));
  await scaffoldTask(join(base, 'bad-weights'));
  await writeFile(join(base, 'bad-weights/test_weights.json'), '{"test_greeting_exists": 0.5, "test_nope": 0.5}\n');
  await scaffoldTask(join(base, 'leaky'), { format: 'harbor' });
  await writeFile(join(base, 'leaky/tests/test_outputs.py'), (await readFile(join(base, 'leaky/tests/test_outputs.py'), 'utf8')) + '\n\ndef test_oracle():\n    assert open("/solution/solve.sh").read()\n');
  let running = 0;
  let peak = 0;
  const results = await validateTasks([join(base, 'good'), join(base, 'bad-weights'), join(base, 'leaky'), join(base, 'missing')], {
    staticOnly: true,
    concurrency: 2,
    onProgress: (e) => {
      if (e.type === 'start') peak = Math.max(peak, ++running);
      if (e.type === 'done') running--;
    },
  });
  assert.ok(peak <= 2);
  assert.deepEqual(results.map((r) => r.valid), [true, false, false, false]);
  assert.match(results[1].problems.join('\n'), /weights: weight 'test_nope' names no test function/);
  assert.match(results[2].problems.join('\n'), /solution-leak: tests\/test_outputs\.py:\d+ references the reference solution/);
  assert.match(results[3].problems.join('\n'), /load: .*no such task directory/);
  assert.equal(results[0].build.status, 'skipped');
});

test('CLI: new-task, validate --static-only --json, import tbrl-csv, usage errors', async () => {
  const base = await scratch();
  const made = cli(['new-task', join(base, 't1'), '--format', 'harbor']);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /Created a Harbor task/);
  assert.match(made.stdout, /tests\/test_outputs\.py/);

  const json = join(base, 'v.json');
  const v = cli(['validate', join(base, 't1'), '--static-only', '--json', json]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /task\s+format\s+valid/);
  const report = JSON.parse(await readFile(json, 'utf8'));
  assert.equal(report.valid, true);
  assert.equal(report.tasks[0].id, 't1');

  const bad = cli(['new-task', join(base, 't2'), '--format', 'yaml']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--format must be tb or harbor/);

  const imp = cli(['import', 'tbrl-csv', join(ROOT, 'test/fixtures/tasks/csv/tbrl-dataset-small.csv'), join(base, 'imported')]);
  assert.equal(imp.code, 1, 'failed rows make the exit code 1');
  assert.match(imp.stdout, /FAIL line\s+\d+\s+csv-badjson\n\s+row \d+ test_weights.*not valid JSON/);
  assert.match(imp.stdout, /2 written, 5 failed, 0 skipped \(of 7 rows\)/);
  assert.deepEqual((await readdir(join(base, 'imported'))).sort(), ['csv-hello', 'csv-mismatch']);

  const conv = cli(['import', 'task', join(ROOT, 'test/fixtures/tasks/harbor-csv-stats'), join(base, 'as-tb'), '--format', 'tb']);
  assert.equal(conv.code, 0, conv.stderr);
  assert.match(conv.stdout, /Wrote a Terminal-Bench task/);
  assert.match(conv.stdout, /note: .*verifier\.env/);
  assert.equal((await loadTask(join(base, 'as-tb'))).format, 'terminal-bench');
});
