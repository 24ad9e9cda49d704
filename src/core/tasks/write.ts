import { chmod, cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Document, Scalar, parse as parseYaml } from 'yaml';
import type * as SmolToml from 'smol-toml' with { 'resolution-mode': 'import' };
import { TbrlError } from '../errors';
import type { Task } from './model';
import { isPlainObject } from './fields';
import { copyEntries, exists } from './fsutil';
import { FROM_TB_MARKER, HARBOR_INSTRUCTION_FILE, HARBOR_TASK_FILE, LAYOUT_STASH_KEY, NULL_FIELDS_KEY, type HarborLayout } from './harbor';
import { FROM_HARBOR_MARKER, TB_DEFAULT_RUNNER, TB_HARBOR_STASH_KEY, TB_TASK_FILE } from './terminal-bench';
import { WEIGHTS_FILE, serializeTestWeights } from './weights';

// See fields.ts: smol-toml's CommonJS build, typed by its ESM declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { stringify: stringifyToml } = require('smol-toml') as typeof SmolToml;

export type WritableFormat = 'terminal-bench' | 'harbor';

export interface WriteResult {
  dir: string;
  /** What the target format cannot carry, or carries only for tbrl (one sentence each). */
  warnings: string[];
}

/** Files of a Terminal-Bench task root that are the format itself, not the image's build context. */
const TB_STRUCTURE = new Set([TB_TASK_FILE, 'run-tests.sh', 'solution.sh', 'solution.yaml', 'tests', WEIGHTS_FILE, 'docker-compose.yaml']);
const HARBOR_STRUCTURE = new Set([HARBOR_TASK_FILE, HARBOR_INSTRUCTION_FILE, 'environment', 'tests', 'solution', WEIGHTS_FILE]);
/** Names under which one format keeps the other's files so converting back restores them. */
const TB_RUNNER_IN_HARBOR = 'tb-run-tests.sh';
const TB_COMPOSE_IN_HARBOR = 'tb-docker-compose.yaml';
const TB_SOLUTION_YAML_IN_HARBOR = 'solution.yaml';

/**
 * Write `task` as a task directory in `format` at `outDir` (a new or empty directory). Files the
 * task's directory holds beyond the config (build context, tests, solution) are copied across.
 */
export async function writeTask(task: Task, outDir: string, format: WritableFormat): Promise<WriteResult> {
  const dir = resolve(outDir);
  if (dir === resolve(task.dir)) {
    throw new TbrlError('TASK_WRITE_IN_PLACE', `${dir}: refusing to write a task over its own source directory`, 'Write to a new directory, then replace the old one if the result is what you want.');
  }
  const existing = await readdir(dir).catch(() => [] as string[]);
  if (existing.length > 0) {
    throw new TbrlError('TASK_WRITE_NOT_EMPTY', `${dir}: directory is not empty`, 'Choose a new output directory (tasks are never merged into existing files).');
  }
  await mkdir(dir, { recursive: true });
  const warnings: string[] = [];
  if (format === 'terminal-bench') await writeTerminalBench(task, dir, warnings);
  else await writeHarbor(task, dir, warnings);
  return { dir, warnings };
}

function metadataOf(task: Task): Record<string, unknown> {
  return isPlainObject(task.extra.metadata) ? task.extra.metadata : {};
}

function taskTomlOf(task: Task): Record<string, unknown> {
  return isPlainObject(task.extra.taskToml) ? task.extra.taskToml : {};
}

async function readRunner(task: Task): Promise<string> {
  return readFile(task.tests.runner, 'utf8').catch(() => task.tests.inlineRunner ?? TB_DEFAULT_RUNNER);
}

async function writeExecutable(path: string, content: string | Buffer): Promise<void> {
  await writeFile(path, content);
  await chmod(path, 0o755);
}

// ---------------------------------------------------------------- Terminal-Bench 1.x

/** task.yaml text for a task (Terminal-Bench 1.x field names and order; unmodelled fields after). */
export function renderTaskYaml(task: Task, warnings: string[] = []): string {
  const metadata = metadataOf(task);
  const taskToml = taskTomlOf(task);
  const yaml: Record<string, unknown> = { instruction: task.instruction };
  if (task.author?.name !== undefined) yaml.author_name = task.author.name;
  if (task.author?.email !== undefined) yaml.author_email = task.author.email;
  if (task.difficulty !== undefined) yaml.difficulty = task.difficulty;
  if (task.category !== undefined) yaml.category = task.category;
  yaml.tags = task.tags;
  for (const key of ['parser_name']) if (key in metadata) yaml[key] = metadata[key];
  yaml.max_agent_timeout_sec = task.agentTimeoutSec;
  yaml.max_test_timeout_sec = task.testTimeoutSec;
  for (const [key, value] of Object.entries(metadata)) if (!(key in yaml)) yaml[key] = value;
  if (!task.allowInternet) {
    yaml.allow_internet = false;
    warnings.push('allow_internet = false: Terminal-Bench 1.x has no such setting (tbrl honours the allow_internet key it writes to task.yaml; the Terminal-Bench harness ignores it).');
  }
  if (task.extra.descriptions !== undefined) yaml.descriptions = task.extra.descriptions;
  const layout = task.extra.harborLayout as HarborLayout | undefined;
  const stash: Record<string, unknown> = { ...taskToml };
  if (layout && (layout.tags !== 'metadata.tags' || layout.author !== 'metadata')) stash[LAYOUT_STASH_KEY] = layout;
  if (Object.keys(stash).length > 0) {
    yaml[TB_HARBOR_STASH_KEY] = stash;
    warnings.push(`task.toml settings without a Terminal-Bench equivalent (${describeStash(taskToml)}) are kept under '${TB_HARBOR_STASH_KEY}:' in task.yaml for converting back; Terminal-Bench ignores them.`);
  }
  const doc = new Document(yaml);
  const firstKey = (doc.contents as { items?: { key?: unknown }[] } | null)?.items?.[0]?.key;
  if (typeof task.extra.headerComment === 'string' && firstKey instanceof Scalar) firstKey.commentBefore = task.extra.headerComment;
  const instruction = doc.get('instruction', true);
  if (instruction instanceof Scalar) instruction.type = Scalar.BLOCK_LITERAL;
  // Terminal-Bench writes its timeouts as floats (360.0); keep that look.
  for (const key of ['max_agent_timeout_sec', 'max_test_timeout_sec']) {
    const node = doc.get(key, true);
    if (node instanceof Scalar) node.minFractionDigits = 1;
  }
  return doc.toString({ lineWidth: 0, nullStr: '' });
}

async function writeTerminalBench(task: Task, dir: string, warnings: string[]): Promise<void> {
  const fromHarbor = task.format === 'harbor';

  await writeFile(join(dir, TB_TASK_FILE), renderTaskYaml(task, warnings));

  // Environment: Terminal-Bench builds from the task root.
  if ('image' in task.environment) {
    await writeFile(join(dir, 'docker-compose.yaml'), `services:\n  client:\n    image: ${JSON.stringify(task.environment.image)}\n    command: [ "sh", "-c", "sleep infinity" ]\n`);
  } else if (fromHarbor) {
    const { context, dockerfile } = task.environment;
    for (const name of await readdir(context)) {
      if (name === TB_COMPOSE_IN_HARBOR) continue;
      if (TB_STRUCTURE.has(name)) {
        warnings.push(`environment/${name} collides with a Terminal-Bench file of the same name and was not copied.`);
        continue;
      }
      await cp(join(context, name), join(dir, name), { recursive: true });
    }
    if (await exists(join(context, TB_COMPOSE_IN_HARBOR))) {
      await cp(join(context, TB_COMPOSE_IN_HARBOR), join(dir, 'docker-compose.yaml'));
    } else if (dockerfile !== 'Dockerfile') {
      await writeFile(join(dir, 'docker-compose.yaml'), `services:\n  client:\n    build:\n      dockerfile: ${JSON.stringify(dockerfile)}\n    command: [ "sh", "-c", "sleep infinity" ]\n`);
    }
    if (await exists(join(context, 'docker-compose.yaml'))) {
      warnings.push('environment/docker-compose.yaml was copied verbatim; Harbor compose variables mean nothing to Terminal-Bench.');
    }
  } else {
    await copyEntries(task.dir, dir, new Set([...TB_STRUCTURE].filter((n) => n !== 'docker-compose.yaml')).add('tests'));
    const context = task.environment.context;
    if (resolve(context) !== resolve(task.dir) && !resolve(context).startsWith(resolve(task.dir) + '/')) {
      warnings.push(`the build context ${context} lies outside the task directory and was not copied.`);
    }
  }
  if (fromHarbor) {
    // Harbor keeps other root files (README, notes) beside task.toml; Terminal-Bench keeps them at its root too.
    await copyEntries(task.dir, dir, HARBOR_STRUCTURE);
  }

  // Tests.
  const testsOut = join(dir, 'tests');
  const runner = await readFile(task.tests.runner, 'utf8').catch(() => undefined);
  if (fromHarbor && runner?.includes(FROM_TB_MARKER)) {
    await copyEntries(task.tests.dir, testsOut, new Set(['test.sh', TB_RUNNER_IN_HARBOR, WEIGHTS_FILE]));
    const original = join(task.tests.dir, TB_RUNNER_IN_HARBOR);
    if (await exists(original)) await writeExecutable(join(dir, 'run-tests.sh'), await readFile(original));
  } else if (fromHarbor) {
    await copyEntries(task.tests.dir, testsOut, new Set([WEIGHTS_FILE]));
    await writeExecutable(join(dir, 'run-tests.sh'), harborWrapperRunner());
    warnings.push('tests/test.sh writes a Harbor reward file; run-tests.sh wraps it so tbrl reads /logs/verifier/reward.txt, but the Terminal-Bench harness itself only parses pytest output.');
  } else {
    await copyEntries(task.tests.dir, testsOut, new Set([WEIGHTS_FILE]));
    const own = await readFile(join(task.dir, 'run-tests.sh')).catch(() => undefined);
    if (own !== undefined) await writeExecutable(join(dir, 'run-tests.sh'), own);
  }
  if (task.testWeights) await writeFile(join(dir, WEIGHTS_FILE), serializeTestWeights(task.testWeights));

  // Solution.
  if (task.solution?.kind === 'script') {
    const stash = join(task.dir, 'solution', TB_SOLUTION_YAML_IN_HARBOR);
    if (fromHarbor && (await exists(stash))) await cp(stash, join(dir, 'solution.yaml'));
    else await writeExecutable(join(dir, 'solution.sh'), await readFile(task.solution.path));
    if (fromHarbor) {
      const others = (await readdir(join(task.dir, 'solution'))).filter((n) => n !== 'solve.sh' && n !== TB_SOLUTION_YAML_IN_HARBOR);
      if (others.length > 0) warnings.push(`solution/${others.join(', solution/')}: Terminal-Bench has only solution.sh, so these files were not carried.`);
    }
  } else if (task.solution?.kind === 'commands') {
    await writeFile(join(dir, 'solution.yaml'), solutionYaml(task));
  }
}

function composeServices(text: string): string[] {
  try {
    const services: unknown = (parseYaml(text) as { services?: unknown } | null)?.services;
    return isPlainObject(services) ? Object.keys(services) : [];
  } catch {
    return [];
  }
}

function describeStash(toml: Record<string, unknown>): string {
  const keys: string[] = [];
  for (const [k, v] of Object.entries(toml)) {
    if (isPlainObject(v)) for (const sub of Object.keys(v)) keys.push(`${k}.${sub}`);
    else keys.push(k);
  }
  return keys.join(', ');
}

function harborWrapperRunner(): string {
  return [
    '#!/bin/bash',
    `# ${FROM_HARBOR_MARKER}: runs the Harbor tests/test.sh, which writes /logs/verifier/reward.txt.`,
    'mkdir -p /logs/verifier',
    'bash "${TEST_DIR:-/tests}/test.sh"',
    'status=$?',
    'echo "harbor reward: $(cat /logs/verifier/reward.txt 2>/dev/null || echo missing)"',
    'exit $status',
    '',
  ].join('\n');
}

function solutionYaml(task: Task): string {
  if (task.solution?.kind !== 'commands') return '';
  const entries = Array.isArray(task.extra.solutionYaml) && task.extra.solutionYaml.length === task.solution.commands.length
    ? task.extra.solutionYaml
    : task.solution.commands.map((command) => ({ command, min_timeout_sec: 0.1, block: true, append_enter: true }));
  return new Document(entries).toString({ lineWidth: 0 });
}

// ---------------------------------------------------------------- Harbor

/** task.toml text for a task (Harbor tables; unmodelled fields kept where they were). */
export function renderTaskToml(task: Task, warnings: string[] = []): string {
  const fromTb = task.format !== 'harbor';
  const metadata = { ...metadataOf(task) };
  const stash = taskTomlOf(task);
  const layout: HarborLayout = isPlainObject(task.extra.harborLayout)
    ? (task.extra.harborLayout as unknown as HarborLayout)
    : { tags: 'metadata.tags', author: 'metadata' };

  const toml: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(stash)) if (!isPlainObject(v)) toml[k] = v;
  if (!('version' in toml) && !('schema_version' in toml)) toml.version = '1.0';
  const table = (name: string) => ({ ...(isPlainObject(stash[name]) ? stash[name] : {}) }) as Record<string, unknown>;

  const taskTable = table('task');
  if (layout.tags === 'task.keywords') taskTable.keywords = task.tags;
  if (layout.author === 'task.authors' && task.author && !Array.isArray(taskTable.authors)) {
    taskTable.authors = [{ ...(task.author.name !== undefined ? { name: task.author.name } : {}), ...(task.author.email !== undefined ? { email: task.author.email } : {}) }];
  }
  if (Object.keys(taskTable).length > 0 || isPlainObject(stash.task)) toml.task = taskTable;

  const meta: Record<string, unknown> = {};
  if (layout.author === 'metadata') {
    if (task.author?.name !== undefined) meta.author_name = task.author.name;
    if (task.author?.email !== undefined) meta.author_email = task.author.email;
  }
  if (task.difficulty !== undefined) meta.difficulty = task.difficulty;
  if (task.category !== undefined) meta.category = task.category;
  if (layout.tags === 'metadata.tags') meta.tags = task.tags;
  if (fromTb) {
    if (typeof metadata.parser_name === 'string' && metadata.parser_name !== 'pytest') {
      warnings.push(`parser_name '${metadata.parser_name}' has no Harbor equivalent: the generated tests/test.sh scores pytest output (the name is kept in [metadata]).`);
    }
    if (metadata.run_tests_in_same_shell === true) {
      warnings.push('run_tests_in_same_shell = true has no Harbor equivalent: Harbor runs tests/test.sh in its own verifier session (kept in [metadata]).');
    }
  }
  // TOML has no null: remember which Terminal-Bench fields were empty so converting back restores them.
  const nulls = Object.keys(metadata).filter((k) => metadata[k] === null);
  Object.assign(meta, Object.fromEntries(Object.entries(metadata).filter(([, v]) => v !== null)));
  if (nulls.length > 0) meta[NULL_FIELDS_KEY] = nulls;
  toml.metadata = meta;

  toml.verifier = { ...table('verifier'), timeout_sec: task.testTimeoutSec };
  toml.agent = { ...table('agent'), timeout_sec: task.agentTimeoutSec };
  const environment = table('environment');
  if (!task.allowInternet) environment.allow_internet = false;
  if ('image' in task.environment) environment.docker_image = task.environment.image;
  if (Object.keys(environment).length > 0) toml.environment = environment;
  for (const [k, v] of Object.entries(stash)) if (isPlainObject(v) && !(k in toml)) toml[k] = v;
  const comment = typeof task.extra.headerComment === 'string' ? task.extra.headerComment.split('\n').map((l) => `#${l}\n`).join('') : '';
  return comment + stringifyToml(toml) + '\n';
}

async function writeHarbor(task: Task, dir: string, warnings: string[]): Promise<void> {
  const fromTb = task.format !== 'harbor';
  await writeFile(join(dir, HARBOR_TASK_FILE), renderTaskToml(task, warnings));
  // A multi-step task's instructions live under steps/ (copied with the other entries); a root one is optional.
  const stepsOnly = !fromTb && task.harbor?.steps !== undefined;
  if (!stepsOnly || task.harbor?.rootInstruction) await writeFile(join(dir, HARBOR_INSTRUCTION_FILE), task.instruction.endsWith('\n') ? task.instruction : `${task.instruction}\n`);

  // Environment: Harbor builds from environment/.
  const envOut = join(dir, 'environment');
  await mkdir(envOut, { recursive: true });
  if ('context' in task.environment) {
    if (fromTb) {
      const context = task.environment.context;
      const skip = resolve(context) === resolve(task.dir) ? TB_STRUCTURE : new Set<string>();
      await copyEntries(context, envOut, skip);
      if (task.environment.dockerfile !== 'Dockerfile') {
        warnings.push(`the Dockerfile is named ${task.environment.dockerfile}; Harbor builds environment/Dockerfile, so it was copied under that name too.`);
        await cp(join(context, task.environment.dockerfile), join(envOut, 'Dockerfile'));
      }
    } else {
      await copyEntries(task.environment.context, envOut);
    }
  }
  const compose = join(task.dir, 'docker-compose.yaml');
  if (fromTb && (await exists(compose))) {
    await cp(compose, join(envOut, TB_COMPOSE_IN_HARBOR));
    if (composeServices(await readFile(compose, 'utf8')).some((name) => name !== 'client')) {
      warnings.push('docker-compose.yaml defines services besides client; Harbor runs one container from environment/Dockerfile (the file is kept as environment/tb-docker-compose.yaml).');
    }
  }
  if (!fromTb) await copyEntries(task.dir, dir, HARBOR_STRUCTURE);

  // Tests.
  const testsOut = join(dir, 'tests');
  if (fromTb && task.tests.kind === 'harbor-reward') {
    // A Terminal-Bench task that tbrl made from a Harbor one: tests/test.sh is the original.
    await copyEntries(task.tests.dir, testsOut, new Set([WEIGHTS_FILE]));
  } else if (fromTb) {
    await copyEntries(task.tests.dir, testsOut, new Set([WEIGHTS_FILE]));
    await writeExecutable(join(testsOut, TB_RUNNER_IN_HARBOR), await readRunner(task));
    await writeExecutable(
      join(testsOut, 'test.sh'),
      weightedRewardTestSh(`bash "$TEST_DIR/${TB_RUNNER_IN_HARBOR}"`, `${FROM_TB_MARKER}: runs the original run-tests.sh (kept as ${TB_RUNNER_IN_HARBOR}) and writes Harbor's reward.`),
    );
  } else {
    await copyEntries(task.tests.dir, testsOut, new Set([WEIGHTS_FILE]));
  }
  if (task.testWeights) {
    const where = !fromTb && task.extra.weightsIn === 'root' ? join(dir, WEIGHTS_FILE) : join(testsOut, WEIGHTS_FILE);
    await writeFile(where, serializeTestWeights(task.testWeights));
  }

  // Solution.
  if (task.solution && !(stepsOnly && !(await exists(join(task.dir, 'solution'))))) {
    const solOut = join(dir, 'solution');
    await mkdir(solOut, { recursive: true });
    if (!fromTb) await copyEntries(join(task.dir, 'solution'), solOut);
    else if (task.solution.kind === 'script') await writeExecutable(join(solOut, 'solve.sh'), await readFile(task.solution.path));
    else {
      await writeExecutable(join(solOut, 'solve.sh'), ['#!/bin/bash', '# Commands of solution.yaml, in order.', ...task.solution.commands, ''].join('\n'));
      await writeFile(join(solOut, TB_SOLUTION_YAML_IN_HARBOR), solutionYaml(task));
      warnings.push('solution.yaml commands were joined into solution/solve.sh; their per-command timeouts and key flags (block, append_enter) have no Harbor equivalent (kept in solution/solution.yaml).');
    }
  }
}

/**
 * Harbor's verifier contract is a reward file. This test.sh runs a pytest command (printing its -rA
 * summary) and turns the summary into the weighted score of test_weights.json (or pass/fail without it).
 */
export function weightedRewardTestSh(command: string, comment: string): string {
  return [
    '#!/bin/bash',
    `# ${comment}`,
    'mkdir -p /logs/verifier',
    'export TEST_DIR="${TEST_DIR:-/tests}"',
    'log=$(mktemp)',
    `${command} 2>&1 | tee "$log"`,
    'status=${PIPESTATUS[0]}',
    'python3 - "$log" "$TEST_DIR/test_weights.json" "$status" > /logs/verifier/reward.txt <<\'PY\' || { [ "$status" -eq 0 ] && echo 1 || echo 0; } > /logs/verifier/reward.txt',
    'import json, os, re, sys',
    'log, weights_path, status = sys.argv[1], sys.argv[2], int(sys.argv[3])',
    'results = {}',
    'for line in open(log, errors="replace"):',
    '    m = re.match(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\\S+)", line)',
    '    if m:',
    '        results[m.group(2).split("::")[-1]] = m.group(1) in ("PASSED", "XFAIL")',
    'if os.path.exists(weights_path):',
    '    weights = json.load(open(weights_path))',
    '    def passed(key):',
    '        names = [n for n in results if re.sub(r"\\[.*\\]$", "", n) in (key, "test_" + key)]',
    '        return bool(names) and all(results[n] for n in names)',
    '    total = sum(weights.values())',
    '    print(round(sum(w for k, w in weights.items() if passed(k)) / total, 6) if total > 0 else 0)',
    'else:',
    '    print(1 if status == 0 and results and all(results.values()) else 0)',
    'PY',
    'exit 0',
    '',
  ].join('\n');
}
