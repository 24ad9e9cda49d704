/**
 * The Harbor task format (task.toml, instruction.md, environment/, tests/test.sh, solution/):
 * reader, writer (with the rules for tasks converted from Terminal-Bench) and the adapter.
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type * as SmolToml from 'smol-toml' with { 'resolution-mode': 'import' };
import { TbrlError } from '../../errors';
import type { Task } from '../model';
import { FieldReader, authorOf, isPlainObject, parseTomlDoc } from '../fields';
import { copyEntries, exists } from '../fsutil';
import { WEIGHTS_FILE, readTestWeights, serializeTestWeights } from '../weights';
import { readHarborRuntime } from '../harbor-runtime';
import { TB_DEFAULT_RUNNER, TB_STRUCTURE } from './terminal-bench';
import { metadataOf, solutionYaml, taskTomlOf, writeExecutable } from './shared';
import type { TaskFormatAdapter } from './types';

// See fields.ts: smol-toml's CommonJS build, typed by its ESM declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { stringify: stringifyToml } = require('smol-toml') as typeof SmolToml;

export const HARBOR_ID = 'harbor';

export const HARBOR_TASK_FILE = 'task.toml';
export const HARBOR_INSTRUCTION_FILE = 'instruction.md';
export const HARBOR_DEFAULT_TIMEOUT_SEC = 600;
/** Marker in a tests/test.sh that tbrl wrote around a Terminal-Bench run-tests.sh. */
export const FROM_TB_MARKER = 'tbrl:from-terminal-bench';

export const HARBOR_EXAMPLE = [
  'version = "1.0"',
  '',
  '[metadata]',
  'difficulty = "easy"',
  'category = "file-operations"',
  'tags = ["bash"]',
  '',
  '[verifier]',
  'timeout_sec = 120.0',
  '',
  '[agent]',
  'timeout_sec = 600.0',
  '',
  '[environment]',
  'allow_internet = true',
].join('\n');

/** [metadata] key listing Terminal-Bench fields that were empty (null), which TOML cannot write. */
export const NULL_FIELDS_KEY = '_tbrl_null_fields';
/** Key of the task.toml stash in task.yaml that remembers the Harbor layout (schema 1.0 vs 1.1 homes). */
export const LAYOUT_STASH_KEY = 'tbrl_layout';

/** Where a Harbor file put the fields that have two homes across schema versions (1.0 vs 1.1). */
export interface HarborLayout {
  tags: 'metadata.tags' | 'task.keywords';
  author: 'metadata' | 'task.authors';
}

/** Root entries of a Harbor task that are the format itself (the rest is copied as it is). */
export const HARBOR_STRUCTURE: ReadonlySet<string> = new Set([HARBOR_TASK_FILE, HARBOR_INSTRUCTION_FILE, 'environment', 'tests', 'solution', WEIGHTS_FILE]);
/** Names under which a Harbor task keeps a Terminal-Bench task's files so converting back restores them. */
export const TB_RUNNER_IN_HARBOR = 'tb-run-tests.sh';
export const TB_COMPOSE_IN_HARBOR = 'tb-docker-compose.yaml';
export const TB_SOLUTION_YAML_IN_HARBOR = 'solution.yaml';

export async function isHarborDir(dir: string): Promise<boolean> {
  return exists(join(dir, HARBOR_TASK_FILE));
}

export async function readHarbor(dir: string): Promise<Task> {
  const file = join(dir, HARBOR_TASK_FILE);
  const doc = parseTomlDoc(file, await readFile(file, 'utf8'), HARBOR_EXAMPLE);
  const f = new FieldReader(doc, HARBOR_EXAMPLE);
  for (const table of ['task', 'metadata', 'verifier', 'agent', 'environment', 'solution']) f.table([table]);

  const runtime = await readHarborRuntime(dir, f);
  const instructionFile = join(dir, HARBOR_INSTRUCTION_FILE);
  // A multi-step task's instructions are per step (steps/<name>/instruction.md); the root one is optional.
  const instruction = (await readFile(instructionFile, 'utf8').catch(() => undefined)) ?? runtime.steps?.[0].instruction;
  if (instruction === undefined || instruction.trim() === '') {
    throw new TbrlError(
      'TASK_NO_INSTRUCTION',
      `${instructionFile}: a Harbor task needs a non-empty instruction.md`,
      'Write the task text the agent receives into instruction.md next to task.toml.',
    );
  }

  const keywords = f.stringArray(['task', 'keywords']);
  const authors = doc.data.task !== undefined ? readAuthors(f) : undefined;
  const layout: HarborLayout = {
    tags: keywords !== undefined && f.stringArray(['metadata', 'tags']) === undefined ? 'task.keywords' : 'metadata.tags',
    author: authors !== undefined ? 'task.authors' : 'metadata',
  };
  const author = authors?.[0] ?? { name: f.string(['metadata', 'author_name']), email: f.string(['metadata', 'author_email']) };

  const docker = f.string(['environment', 'docker_image']);
  const envDir = join(dir, 'environment');
  const environment: Task['environment'] = (await exists(join(envDir, 'Dockerfile')))
    ? { context: envDir, dockerfile: 'Dockerfile' }
    : docker !== undefined
      ? { image: docker }
      : noEnvironment(envDir, f.string(['environment', 'type']));

  const testsDir = join(dir, 'tests');
  const runner = join(testsDir, 'test.sh');
  // Steps may each bring their own test.sh; the task's tests/ is then only shared helpers.
  const stepRunner = runtime.steps?.map((s) => s.testsDir && join(s.testsDir, 'test.sh')).find((p) => p !== undefined);
  const runnerText = (await readFile(runner, 'utf8').catch(() => undefined)) ?? (stepRunner !== undefined ? await readFile(stepRunner, 'utf8').catch(() => undefined) : undefined);
  if (runnerText === undefined) {
    throw new TbrlError(
      'TASK_NO_TESTS',
      `${runner}: a Harbor task needs tests/test.sh`,
      'Add tests/test.sh that checks the container and writes a reward to /logs/verifier/reward.txt, e.g.\n#!/bin/bash\nmkdir -p /logs/verifier\nif pytest /tests/test_outputs.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt',
    );
  }
  const solve = join(dir, 'solution', 'solve.sh');
  const weights = await readTestWeights(dir, testsDir);

  return {
    id: basename(dir),
    dir,
    format: HARBOR_ID,
    instruction: instruction.replace(/\n$/, ''),
    difficulty: f.string(['metadata', 'difficulty']),
    category: f.string(['metadata', 'category']),
    tags: keywords ?? f.stringArray(['metadata', 'tags']) ?? [],
    author: authorOf(author.name, author.email),
    environment,
    agentTimeoutSec: f.number(['agent', 'timeout_sec'], { positive: true }) ?? HARBOR_DEFAULT_TIMEOUT_SEC,
    testTimeoutSec: f.number(['verifier', 'timeout_sec'], { positive: true }) ?? HARBOR_DEFAULT_TIMEOUT_SEC,
    allowInternet: f.boolean(['environment', 'allow_internet']) ?? true,
    tests: { runner, dir: testsDir, kind: runnerText.includes(FROM_TB_MARKER) ? 'pytest-summary' : 'harbor-reward' },
    testWeights: weights?.weights,
    solution: (await exists(solve)) ? { kind: 'script', path: solve } : runtime.steps?.[0].solution ? { kind: 'script', path: runtime.steps[0].solution } : undefined,
    harbor: runtime,
    extra: {
      ...splitUnmodelled(doc.data, layout),
      harborLayout: layout,
      ...(doc.headerComment !== undefined ? { headerComment: doc.headerComment } : {}), ...(weights ? { weightsIn: dirname(weights.file) === dir ? 'root' : 'tests' } : {}) },
  };
}

function noEnvironment(envDir: string, type: string | undefined): never {
  throw new TbrlError(
    'TASK_NO_ENVIRONMENT',
    `${envDir}: a Harbor task needs environment/Dockerfile or [environment] docker_image in task.toml${type !== undefined && type !== 'docker' ? ` (this one sets [environment] type = "${type}", an environment provider of its own that tbrl cannot start: only Docker containers run here)` : ''}`,
    'Add environment/Dockerfile, e.g.\nFROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app',
  );
}

function readAuthors(f: FieldReader): { name?: string; email?: string }[] | undefined {
  const task = f.table(['task']);
  const authors = task?.authors;
  if (authors === undefined) return undefined;
  if (!Array.isArray(authors) || authors.some((a) => !isPlainObject(a))) {
    return f.fail(['task', 'authors'], 'must be a list of { name = "...", email = "..." } tables');
  }
  return authors.map((a) => ({
    name: typeof a.name === 'string' ? a.name : undefined,
    email: typeof a.email === 'string' ? a.email : undefined,
  }));
}

/** Fields the Task model names, by table; the rest of task.toml is kept verbatim. */
const MODELLED: Record<string, string[]> = {
  metadata: ['difficulty', 'category', 'tags', 'author_name', 'author_email'],
  verifier: ['timeout_sec'],
  agent: ['timeout_sec'],
  environment: ['allow_internet', 'docker_image'],
  task: ['keywords'],
};

function splitUnmodelled(data: Record<string, unknown>, layout: HarborLayout): { metadata: Record<string, unknown>; taskToml: Record<string, unknown> } {
  const taskToml: Record<string, unknown> = {};
  let metadata: Record<string, unknown> = {};
  for (const [table, value] of Object.entries(data)) {
    // Schema "1.0" is what the writer emits when it has nothing else to go on.
    if (table === 'version' && value === '1.0') continue;
    if (!isPlainObject(value)) {
      taskToml[table] = value;
      continue;
    }
    const drop = new Set(MODELLED[table] ?? []);
    // Only the first author is modelled; the others stay in task.toml.
    if (table === 'task' && layout.author === 'task.authors' && Array.isArray(value.authors) && value.authors.length <= 1) drop.add('authors');
    const rest = Object.fromEntries(Object.entries(value).filter(([k]) => !drop.has(k)));
    // Harbor metadata is free-form, like Terminal-Bench's extra task.yaml keys: both share extra.metadata.
    if (table === 'metadata') {
      metadata = rest;
      const nulls = metadata[NULL_FIELDS_KEY];
      if (Array.isArray(nulls)) {
        delete metadata[NULL_FIELDS_KEY];
        for (const key of nulls) if (typeof key === 'string' && !(key in metadata)) metadata[key] = null;
      }
    }
    else if (Object.keys(rest).length > 0 || Object.keys(value).length === 0) taskToml[table] = rest;
  }
  return { metadata, taskToml };
}

// ---------------------------------------------------------------- writing

/** task.toml text for a task (Harbor tables; unmodelled fields kept where they were). */
export function renderTaskToml(task: Task, warnings: string[] = []): string {
  const fromTb = task.format !== HARBOR_ID;
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

async function readRunner(task: Task): Promise<string> {
  return readFile(task.tests.runner, 'utf8').catch(() => task.tests.inlineRunner ?? TB_DEFAULT_RUNNER);
}

async function writeHarbor(task: Task, dir: string, warnings: string[]): Promise<void> {
  const fromTb = task.format !== HARBOR_ID;
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

function composeServices(text: string): string[] {
  try {
    const services: unknown = (parseYaml(text) as { services?: unknown } | null)?.services;
    return isPlainObject(services) ? Object.keys(services) : [];
  } catch {
    return [];
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

// ---------------------------------------------------------------- the adapter

export const HARBOR: TaskFormatAdapter<typeof HARBOR_ID> = {
  id: HARBOR_ID,
  aliases: [],
  label: 'Harbor',
  fullName: 'Harbor',
  summary: 'task.toml, instruction.md, tests/, solution/',
  taskFile: HARBOR_TASK_FILE,
  instructionFile: HARBOR_INSTRUCTION_FILE,
  structure: HARBOR_STRUCTURE,
  readsAtLoad: [HARBOR_TASK_FILE, HARBOR_INSTRUCTION_FILE, WEIGHTS_FILE, `tests/${WEIGHTS_FILE}`, 'tests/test.sh', 'tests', 'solution', 'solution/solve.sh', 'environment'],
  confine: {
    // Harbor keeps its compose file in environment/; tbrl builds only the Dockerfile, but the keys are refused alike.
    composeFile: 'environment/docker-compose.yaml',
    contextOrigin: 'environment',
    runnerOrigin: 'tests/test.sh',
    files: [{ path: HARBOR_INSTRUCTION_FILE, key: 'the instruction file' }],
    trees: [{ path: 'solution', key: 'the solution directory' }],
  },
  detect: isHarborDir,
  read: readHarbor,
  write: writeHarbor,
  oracleSolutionDir: '/solution',
  savedRun: {
    environmentDir: 'environment',
    files: (p) => ({
      'environment/Dockerfile': p.dockerfile,
      'tests/test.sh': weightedRewardTestSh(`(${p.cd} && ${p.pytest})`, 'Runs the pytest file and writes the weighted score of test_weights.json to /logs/verifier/reward.txt.'),
      'tests/test_outputs.py': p.tests,
      [`tests/${WEIGHTS_FILE}`]: p.weights,
      'solution/solve.sh': p.solution,
      [`solution/${p.changesFile}`]: p.changes,
    }),
  },
  scaffold: {
    metadata: {},
    files: (task, parts) => ({
      'task.toml': renderTaskToml(task),
      'instruction.md': `${task.instruction}\n`,
      'environment/Dockerfile': parts.dockerfile,
      'tests/test.sh': weightedRewardTestSh(`(cd /app && ${parts.pytest})`, 'Runs the pytest file and writes the weighted score of test_weights.json to /logs/verifier/reward.txt.'),
      'tests/test_outputs.py': parts.tests,
      [`tests/${WEIGHTS_FILE}`]: parts.weights,
      'solution/solve.sh': parts.solution,
    }),
  },
};
