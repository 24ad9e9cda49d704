import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TbrlError } from '../../src/core/errors';
import { loadTask, detectTaskFormat } from '../../src/core/tasks/load';
import { convertTask } from '../../src/core/tasks/convert';
import { writeTask } from '../../src/core/tasks/write';
import type { Task } from '../../src/core/tasks/model';

const ROOT = resolve(__dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures/tasks');
const EXAMPLE = join(ROOT, 'examples/hello-world');
const TB = join(FIXTURES, 'tb-log-summary');
const HARBOR = join(FIXTURES, 'harbor-csv-stats');

const scratchDirs: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tbrl-tasks-'));
  scratchDirs.push(dir);
  return dir;
}
after(async () => {
  for (const d of scratchDirs) await rm(d, { recursive: true, force: true });
});

async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(dir, { recursive: true })) {
    const path = join(dir, String(name));
    if ((await stat(path)).isFile()) out[relative(dir, path)] = await readFile(path, 'utf8');
  }
  return out;
}

/** What both formats can express, independent of paths and format. */
function shared(task: Task) {
  return {
    instruction: task.instruction,
    difficulty: task.difficulty,
    category: task.category,
    tags: task.tags,
    author: task.author,
    agentTimeoutSec: task.agentTimeoutSec,
    testTimeoutSec: task.testTimeoutSec,
    allowInternet: task.allowInternet,
    testWeights: task.testWeights,
    metadata: task.extra.metadata,
    taskToml: task.extra.taskToml ?? {},
    headerComment: task.extra.headerComment,
    environmentKind: 'image' in task.environment ? 'image' : 'build',
    solutionKind: task.solution?.kind,
  };
}

async function expectTbrlError(promise: Promise<unknown>, code: string, ...fragments: (string | RegExp)[]): Promise<TbrlError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof TbrlError, `expected a TbrlError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    for (const f of fragments) assert.match(err.message, typeof f === 'string' ? new RegExp(f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : f);
    assert.ok(err.fix, 'every task error carries a fix');
    return err;
  }
  assert.fail(`expected ${code}`);
}

test('Terminal-Bench fixture: every modelled field, unknown fields kept in extra', async () => {
  const t = await loadTask(TB);
  assert.equal(await detectTaskFormat(TB), 'terminal-bench');
  assert.equal(t.format, 'terminal-bench');
  assert.equal(t.id, 'tb-log-summary');
  assert.match(t.instruction, /^\/app\/access\.log is an nginx access log\./);
  assert.equal(t.difficulty, 'medium');
  assert.equal(t.category, 'system-administration');
  assert.deepEqual(t.tags, ['logs', 'text-processing']);
  assert.deepEqual(t.author, { name: 'Fixture Author', email: 'fixture@example.invalid' });
  assert.equal(t.agentTimeoutSec, 600);
  assert.equal(t.testTimeoutSec, 120);
  assert.deepEqual(t.environment, { context: TB, dockerfile: 'Dockerfile' });
  assert.deepEqual(t.tests, { runner: join(TB, 'run-tests.sh'), dir: join(TB, 'tests'), kind: 'pytest-summary' });
  assert.deepEqual(t.testWeights, { report_exists: 0.25, report_counts: 0.75 });
  assert.equal(t.solution?.kind, 'commands');
  assert.equal(t.solution?.kind === 'commands' && t.solution.commands.length, 2);
  assert.deepEqual(t.extra.metadata, {
    parser_name: 'pytest',
    run_tests_in_same_shell: false,
    disable_asciinema: false,
    estimated_duration_sec: null,
    expert_time_estimate_min: 10,
    junior_time_estimate_min: 30,
    custom_review: { reviewer: 'someone', checks: ['clarity', 'fairness'] },
  });
  assert.match(String(t.extra.headerComment), /BENCHMARK DATA SHOULD NEVER APPEAR/);
});

test('Harbor fixture (schema 1.1): [task] authors/keywords, defaults, unknown tables kept', async () => {
  const t = await loadTask(HARBOR);
  assert.equal(t.format, 'harbor');
  assert.equal(t.instruction, '/app/data.csv has columns `name,value`. Write the sum of the `value` column to /app/sum.txt.');
  assert.deepEqual(t.tags, ['csv', 'python']);
  assert.deepEqual(t.author, { name: 'Fixture Author', email: 'fixture@example.invalid' });
  assert.equal(t.testTimeoutSec, 90);
  assert.equal(t.agentTimeoutSec, 300);
  assert.equal(t.allowInternet, true);
  assert.deepEqual(t.environment, { context: join(HARBOR, 'environment'), dockerfile: 'Dockerfile' });
  assert.deepEqual(t.tests, { runner: join(HARBOR, 'tests/test.sh'), dir: join(HARBOR, 'tests'), kind: 'harbor-reward' });
  assert.deepEqual(t.solution, { kind: 'script', path: join(HARBOR, 'solution/solve.sh') });
  assert.deepEqual(t.extra.metadata, { difficulty_explanation: 'One pass over a small file' });
  assert.deepEqual(t.extra.taskToml, {
    schema_version: '1.1',
    task: { name: 'fixtures/csv-stats', description: 'Summarise a CSV file' },
    verifier: { env: { STRICT: '1' } },
    environment: { build_timeout_sec: 600, cpus: 1, memory_mb: 2048, storage_mb: 10240 },
    custom_table: { owner: 'qa' },
  });
});

test('the bundled example converts TB -> Harbor -> TB byte for byte', async () => {
  const dir = await scratch();
  const toHarbor = await convertTask(EXAMPLE, join(dir, 'h'), 'harbor');
  assert.deepEqual(toHarbor.warnings, []);
  const back = await convertTask(join(dir, 'h'), join(dir, 'tb'), 'terminal-bench');
  assert.deepEqual(back.warnings, []);
  assert.deepEqual(await files(join(dir, 'tb')), await files(EXAMPLE));
  // The Harbor form is a real Harbor task: instruction.md, environment/, tests/test.sh writing a reward.
  const h = await loadTask(join(dir, 'h'));
  assert.equal(h.format, 'harbor');
  assert.deepEqual(shared(h), shared(await loadTask(EXAMPLE)));
  const testSh = await readFile(join(dir, 'h/tests/test.sh'), 'utf8');
  assert.match(testSh, /\/logs\/verifier\/reward\.txt/);
  assert.ok((await stat(join(dir, 'h/environment/data/input.txt'))).isFile(), 'the build context moves into environment/');
});

test('TB fixture with solution.yaml, nulls, nested unknowns: TB -> Harbor -> TB keeps every field', async () => {
  const dir = await scratch();
  const h = await convertTask(TB, join(dir, 'h'), 'harbor');
  assert.ok(h.warnings.some((w) => /solution\.yaml commands were joined/.test(w)), h.warnings.join('\n'));
  const solve = await readFile(join(dir, 'h/solution/solve.sh'), 'utf8');
  assert.match(solve, /awk '\{print \$9\}' \/app\/access\.log/);
  await convertTask(join(dir, 'h'), join(dir, 'tb'), 'terminal-bench');
  const original = await loadTask(TB);
  const again = await loadTask(join(dir, 'tb'));
  assert.deepEqual(shared(again), shared(original));
  assert.deepEqual(again.extra.solutionYaml, original.extra.solutionYaml);
  assert.deepEqual(parseYaml(await readFile(join(dir, 'tb/task.yaml'), 'utf8')), parseYaml(await readFile(join(TB, 'task.yaml'), 'utf8')));
  const before = await files(TB);
  const afterFiles = await files(join(dir, 'tb'));
  assert.deepEqual(Object.keys(afterFiles).sort(), Object.keys(before).sort());
  for (const name of Object.keys(before)) if (name !== 'task.yaml') assert.equal(afterFiles[name], before[name], name);
});

test('Harbor fixture: Harbor -> TB -> Harbor keeps the task.toml; what TB cannot hold is reported', async () => {
  const dir = await scratch();
  const tb = await convertTask(HARBOR, join(dir, 'tb'), 'terminal-bench');
  const warnings = tb.warnings.join('\n');
  assert.match(warnings, /verifier\.env/);
  assert.match(warnings, /environment\.cpus/);
  assert.match(warnings, /custom_table\.owner/);
  assert.match(warnings, /solution\/NOTES\.md/);
  const tbTask = await loadTask(join(dir, 'tb'));
  assert.equal(tbTask.format, 'terminal-bench');
  // The Harbor test.sh stays the verdict: tbrl reads its reward file.
  assert.deepEqual(tbTask.tests, { runner: join(dir, 'tb/tests/test.sh'), dir: join(dir, 'tb/tests'), kind: 'harbor-reward' });
  await convertTask(join(dir, 'tb'), join(dir, 'h'), 'harbor');
  const again = await loadTask(join(dir, 'h'));
  assert.deepEqual(shared(again), shared(await loadTask(HARBOR)));
  assert.deepEqual(again.extra.harborLayout, { tags: 'task.keywords', author: 'task.authors' });
  const { parse } = await import('smol-toml');
  assert.deepEqual(parse(await readFile(join(dir, 'h/task.toml'), 'utf8')), parse(await readFile(join(HARBOR, 'task.toml'), 'utf8')));
  assert.equal(await readFile(join(dir, 'h/tests/test.sh'), 'utf8'), await readFile(join(HARBOR, 'tests/test.sh'), 'utf8'));
  assert.equal(await readFile(join(dir, 'h/environment/data.csv'), 'utf8'), await readFile(join(HARBOR, 'environment/data.csv'), 'utf8'));
});

test('writeTask refuses to overwrite: its own source and non-empty directories', async () => {
  const task = await loadTask(EXAMPLE);
  await expectTbrlError(writeTask(task, EXAMPLE, 'terminal-bench'), 'TASK_WRITE_IN_PLACE');
  const dir = await scratch();
  await writeFile(join(dir, 'keep.txt'), 'x');
  await expectTbrlError(writeTask(task, dir, 'harbor'), 'TASK_WRITE_NOT_EMPTY', dir);
  assert.deepEqual(await readdir(dir), ['keep.txt']);
});

async function tbCopyWith(yamlText: string): Promise<string> {
  const dir = join(await scratch(), 'task');
  await cp(EXAMPLE, dir, { recursive: true });
  await writeFile(join(dir, 'task.yaml'), yamlText);
  return dir;
}

async function harborCopyWith(tomlText: string): Promise<string> {
  const dir = join(await scratch(), 'task');
  await cp(HARBOR, dir, { recursive: true });
  await writeFile(join(dir, 'task.toml'), tomlText);
  return dir;
}

test('malformed task.yaml: syntax error names file and line', async () => {
  const dir = await tbCopyWith('instruction: |-\n  Do it.\ndifficulty: easy\ntags: [a, b\nmax_agent_timeout_sec: 10\n');
  // The unclosed list on line 4 is noticed where the next key starts.
  await expectTbrlError(loadTask(dir), 'TASK_FILE_MALFORMED', `${join(dir, 'task.yaml')}:5:`, 'not valid YAML');
  const dup = await tbCopyWith('instruction: x\ndifficulty: easy\ndifficulty: hard\n');
  await expectTbrlError(loadTask(dup), 'TASK_FILE_MALFORMED', `${join(dup, 'task.yaml')}:3:`, 'unique');
});

test('task.yaml field of the wrong type names file, line and field', async () => {
  const dir = await tbCopyWith('instruction: |-\n  Do it.\ndifficulty: easy\ntags:\n  - a\nmax_agent_timeout_sec: soon\n');
  const err = await expectTbrlError(loadTask(dir), 'TASK_FIELD_INVALID', `${join(dir, 'task.yaml')}:6:`, "field 'max_agent_timeout_sec'", 'must be a number');
  assert.match(err.message, /max_agent_timeout_sec: 360\.0/, 'the fix shows a corrected example');
  const tags = await tbCopyWith('instruction: x\ntags:\n  nested: map\n');
  await expectTbrlError(loadTask(tags), 'TASK_FIELD_INVALID', `${join(tags, 'task.yaml')}:3:`, "field 'tags'", 'list of strings');
  const negative = await tbCopyWith('instruction: x\nmax_test_timeout_sec: -5\n');
  await expectTbrlError(loadTask(negative), 'TASK_FIELD_INVALID', ':2:', "field 'max_test_timeout_sec'", 'greater than 0');
});

test('task.yaml without an instruction names the field', async () => {
  const dir = await tbCopyWith('difficulty: easy\ntags: []\n');
  await expectTbrlError(loadTask(dir), 'TASK_FIELD_INVALID', "field 'instruction'", 'required');
});

test('malformed task.toml: syntax error names file and line', async () => {
  const dir = await harborCopyWith('version = "1.0"\n\n[metadata]\ndifficulty = "easy"\ncategory = unquoted words\n');
  await expectTbrlError(loadTask(dir), 'TASK_FILE_MALFORMED', `${join(dir, 'task.toml')}:5:`, 'not valid TOML');
});

test('task.toml field of the wrong type names file, line and dotted field', async () => {
  const dir = await harborCopyWith('version = "1.0"\n\n[metadata]\ndifficulty = "easy"\n\n[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = "two minutes"\n');
  await expectTbrlError(loadTask(dir), 'TASK_FIELD_INVALID', `${join(dir, 'task.toml')}:10:`, "field 'verifier.timeout_sec'", 'must be a number');
  const table = await harborCopyWith('version = "1.0"\nmetadata = "flat"\n');
  await expectTbrlError(loadTask(table), 'TASK_FIELD_INVALID', ':2:', "field 'metadata'", 'table');
  const internet = await harborCopyWith('[environment]\nallow_internet = "no"\n');
  await expectTbrlError(loadTask(internet), 'TASK_FIELD_INVALID', ':2:', "field 'environment.allow_internet'", 'true or false');
});

test('Harbor task without instruction.md or tests/test.sh: the error says which file to add', async () => {
  const noInstruction = await harborCopyWith('version = "1.0"\n');
  await rm(join(noInstruction, 'instruction.md'));
  await expectTbrlError(loadTask(noInstruction), 'TASK_NO_INSTRUCTION', 'instruction.md');
  const noTests = await harborCopyWith('version = "1.0"\n');
  await rm(join(noTests, 'tests/test.sh'));
  await expectTbrlError(loadTask(noTests), 'TASK_NO_TESTS', 'tests/test.sh', /reward\.txt/);
});

test('test_weights.json: invalid JSON and non-numeric weights name the file, line and key', async () => {
  const dir = await tbCopyWith(await readFile(join(EXAMPLE, 'task.yaml'), 'utf8'));
  await writeFile(join(dir, 'test_weights.json'), '{\n  "test_script_exists": 0.5,\n  "test_counts_correct": "half"\n}\n');
  await expectTbrlError(loadTask(dir), 'TASK_FIELD_INVALID', `${join(dir, 'test_weights.json')}:3:`, "field 'test_counts_correct'");
  await writeFile(join(dir, 'test_weights.json'), '{\n  "test_script_exists": 0.5,\n}\n');
  await expectTbrlError(loadTask(dir), 'TASK_FILE_MALFORMED', 'test_weights.json', 'not valid JSON');
});

test('a directory that is neither format, and a missing one, are reported with the fix', async () => {
  const dir = await scratch();
  await expectTbrlError(loadTask(dir), 'TASK_UNKNOWN_FORMAT', 'task.yaml', 'task.toml');
  await expectTbrlError(loadTask(join(dir, 'nope')), 'TASK_NOT_FOUND', 'nope');
});

test('TB task without run-tests.sh gets the Terminal-Bench default runner inline', async () => {
  const dir = await tbCopyWith(await readFile(join(EXAMPLE, 'task.yaml'), 'utf8'));
  await rm(join(dir, 'run-tests.sh'));
  const t = await loadTask(dir);
  assert.match(t.tests.inlineRunner ?? '', /pytest .*test_outputs\.py/);
});

test('TB task with an image-only docker-compose.yaml and no Dockerfile uses the image', async () => {
  const dir = await tbCopyWith('instruction: x\n');
  await rm(join(dir, 'Dockerfile'));
  await writeFile(join(dir, 'docker-compose.yaml'), 'services:\n  client:\n    image: debian:bookworm-slim\n');
  assert.deepEqual((await loadTask(dir)).environment, { image: 'debian:bookworm-slim' });
  const out = join(await scratch(), 'h');
  await convertTask(dir, out, 'harbor');
  const h = await loadTask(out);
  assert.deepEqual(h.environment, { image: 'debian:bookworm-slim' });
  assert.match(await readFile(join(out, 'task.toml'), 'utf8'), /docker_image = "debian:bookworm-slim"/);
});
