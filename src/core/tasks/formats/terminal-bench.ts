/**
 * The Terminal-Bench 1.x task format (task.yaml, run-tests.sh, tests/, solution.sh|yaml, a Dockerfile
 * or docker-compose.yaml at the root): reader, writer (with the rules for tasks converted from
 * Harbor) and the adapter.
 */
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Document, Scalar } from 'yaml';
import { TbrlError } from '../../errors';
import type { Task } from '../model';
import { FieldReader, authorOf, isPlainObject, parseYamlDoc } from '../fields';
import { copyEntries, exists } from '../fsutil';
import { WEIGHTS_FILE, readTestWeights, serializeTestWeights } from '../weights';
import { tb1HarnessScriptsFor } from '../../reward/tb1-harness';
import { FROM_TB_MARKER, HARBOR_ID, HARBOR_STRUCTURE, LAYOUT_STASH_KEY, TB_COMPOSE_IN_HARBOR, TB_RUNNER_IN_HARBOR, TB_SOLUTION_YAML_IN_HARBOR, type HarborLayout } from './harbor';
import { metadataOf, solutionYaml, taskTomlOf, writeExecutable } from './shared';
import type { TaskFormatAdapter } from './types';

export const TERMINAL_BENCH_ID = 'terminal-bench';

export const TB_TASK_FILE = 'task.yaml';
export const TB_DEFAULT_AGENT_TIMEOUT_SEC = 360;
export const TB_DEFAULT_TEST_TIMEOUT_SEC = 60;
/** Marker in a run-tests.sh that tbrl wrote around a Harbor test.sh (so converting back restores it). */
export const FROM_HARBOR_MARKER = 'tbrl:from-harbor';
/** task.yaml key that carries Harbor-only task.toml settings through a Terminal-Bench round trip. */
export const TB_HARBOR_STASH_KEY = 'harbor';

export const TB_EXAMPLE = [
  'instruction: |-',
  '  Create /app/hello.txt containing "Hello, world!".',
  'difficulty: easy',
  'category: file-operations',
  'tags: [bash]',
  'parser_name: pytest',
  'max_agent_timeout_sec: 360.0',
  'max_test_timeout_sec: 60.0',
  'run_tests_in_same_shell: false',
].join('\n');

/** task.yaml keys the Task model names; everything else is kept verbatim in extra.metadata. */
const MODELLED = new Set([
  'instruction', 'descriptions', 'author_name', 'author_email', 'difficulty', 'category', 'tags',
  'max_agent_timeout_sec', 'max_test_timeout_sec', 'allow_internet', TB_HARBOR_STASH_KEY,
]);

/** Terminal-Bench 1.x runs pytest on tests/test_outputs.py itself when a task has no run-tests.sh. */
export const TB_DEFAULT_RUNNER = [
  '#!/bin/bash',
  '# Terminal-Bench 1.x default when a task has no run-tests.sh.',
  'python3 -m pytest -p no:cacheprovider -rA "${TEST_DIR:-/tests}/test_outputs.py"',
  '',
].join('\n');

/** Files of a Terminal-Bench task root that are the format itself, not the image's build context. */
export const TB_STRUCTURE: ReadonlySet<string> = new Set([TB_TASK_FILE, 'run-tests.sh', 'solution.sh', 'solution.yaml', 'tests', WEIGHTS_FILE, 'docker-compose.yaml']);

/** Terminal-Bench 1.x's standard docker-compose.yaml for a single client container. */
export const TB_COMPOSE = `services:
  client:
    build:
      dockerfile: Dockerfile
    image: \${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: \${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=\${T_BENCH_TEST_DIR}
    volumes:
      - \${T_BENCH_TASK_LOGS_PATH}:\${T_BENCH_CONTAINER_LOGS_PATH}
      - \${T_BENCH_TASK_AGENT_LOGS_PATH}:\${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
`;

export async function isTerminalBenchDir(dir: string): Promise<boolean> {
  return exists(join(dir, TB_TASK_FILE));
}

export async function readTerminalBench(dir: string): Promise<Task> {
  const file = join(dir, TB_TASK_FILE);
  const doc = parseYamlDoc(file, await readFile(file, 'utf8'), TB_EXAMPLE);
  const f = new FieldReader(doc, TB_EXAMPLE);

  let instruction = f.string(['instruction']);
  if (instruction === undefined) {
    // Early Terminal-Bench tasks list descriptions with key "base" instead of one instruction.
    const descriptions = doc.data.descriptions;
    if (Array.isArray(descriptions)) {
      const base = descriptions.find((d) => isPlainObject(d) && d.key === 'base') ?? descriptions[0];
      if (isPlainObject(base) && typeof base.description === 'string') instruction = base.description;
    }
  }
  if (instruction === undefined || instruction.trim() === '') {
    return f.fail(['instruction'], 'is required and must be a non-empty string', `Add the task text as a block scalar:\n${TB_EXAMPLE}`);
  }

  const metadata: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc.data)) if (!MODELLED.has(key)) metadata[key] = value;
  const extra: Record<string, unknown> = { metadata };
  if (doc.headerComment !== undefined) extra.headerComment = doc.headerComment;
  if (doc.data.descriptions !== undefined) extra.descriptions = doc.data.descriptions;
  const stash = f.table([TB_HARBOR_STASH_KEY]);
  if (stash) {
    const { [LAYOUT_STASH_KEY]: layout, ...taskToml } = stash;
    extra.taskToml = taskToml;
    if (isPlainObject(layout)) extra.harborLayout = layout;
  }

  const testsDir = join(dir, 'tests');
  const runner = join(dir, 'run-tests.sh');
  const runnerText = await readFile(runner, 'utf8').catch(() => undefined);
  const weights = await readTestWeights(dir, testsDir);
  if (weights) extra.weightsIn = dirname(weights.file) === dir ? 'root' : 'tests';
  const { solution, entries } = await readSolution(dir);
  // solution.yaml entries carry timeouts and key-press flags the Task model does not name.
  if (entries) extra.solutionYaml = entries;

  return {
    id: basename(dir),
    dir,
    format: TERMINAL_BENCH_ID,
    instruction,
    difficulty: f.string(['difficulty']),
    category: f.string(['category']),
    tags: f.stringArray(['tags']) ?? [],
    author: authorOf(f.string(['author_name']), f.string(['author_email'])),
    environment: await readEnvironment(dir),
    agentTimeoutSec: f.number(['max_agent_timeout_sec'], { positive: true }) ?? TB_DEFAULT_AGENT_TIMEOUT_SEC,
    testTimeoutSec: f.number(['max_test_timeout_sec'], { positive: true }) ?? TB_DEFAULT_TEST_TIMEOUT_SEC,
    allowInternet: f.boolean(['allow_internet']) ?? true,
    // A run-tests.sh that tbrl wrapped around a Harbor test.sh: the reward file is the verdict.
    tests: runnerText?.includes(FROM_HARBOR_MARKER)
      ? { runner: join(testsDir, 'test.sh'), dir: testsDir, kind: 'harbor-reward' }
      : { runner, dir: testsDir, kind: 'pytest-summary', ...(runnerText === undefined ? { inlineRunner: TB_DEFAULT_RUNNER } : {}) },
    testWeights: weights?.weights,
    solution,
    extra,
  };
}

async function readEnvironment(dir: string): Promise<Task['environment']> {
  const compose = join(dir, 'docker-compose.yaml');
  if (await exists(compose)) {
    const doc = parseYamlDoc(compose, await readFile(compose, 'utf8'), 'services:\n  client:\n    build:\n      dockerfile: Dockerfile');
    const f = new FieldReader(doc, 'services:\n  client:\n    build:\n      dockerfile: Dockerfile');
    const client = f.table(['services', 'client']);
    if (client) {
      const build = client.build;
      if (typeof build === 'string') return { context: join(dir, build), dockerfile: 'Dockerfile' };
      if (isPlainObject(build)) {
        const context = typeof build.context === 'string' ? join(dir, build.context) : dir;
        return { context, dockerfile: typeof build.dockerfile === 'string' ? build.dockerfile : 'Dockerfile' };
      }
      // Terminal-Bench's own compose files name the built image with ${T_BENCH_...}; only a literal image is a prebuilt one.
      if (typeof client.image === 'string' && !client.image.includes('${') && !(await exists(join(dir, 'Dockerfile')))) {
        return { image: client.image };
      }
    }
  }
  if (await exists(join(dir, 'Dockerfile'))) return { context: dir, dockerfile: 'Dockerfile' };
  throw new TbrlError(
    'TASK_NO_ENVIRONMENT',
    `${dir}: a Terminal-Bench task needs a Dockerfile or a docker-compose.yaml with a 'client' service`,
    'Add a Dockerfile at the task root, e.g.\nFROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app',
  );
}

async function readSolution(dir: string): Promise<{ solution?: Task['solution']; entries?: unknown[] }> {
  const script = join(dir, 'solution.sh');
  if (await exists(script)) return { solution: { kind: 'script', path: script } };
  const file = join(dir, 'solution.yaml');
  if (!(await exists(file))) return {};
  const example = '- command: "echo hello > /app/hello.txt"\n  min_timeout_sec: 0.1\n  block: true\n  append_enter: true';
  const doc = parseYamlDoc(file, await readFile(file, 'utf8'), example, { list: true });
  const f = new FieldReader(doc, example);
  const items = doc.data.items;
  if (!Array.isArray(items)) return f.fail(['items'], 'must be a list of {command: ...} entries', `Write one entry per command:\n${example}`);
  const commands = items.map((item, i) => {
    if (isPlainObject(item) && typeof item.command === 'string') return item.command;
    if (typeof item === 'string') return item;
    return f.fail(['items', String(i), 'command'], 'must be a string', `Each entry needs a command:\n${example}`);
  });
  return { solution: { kind: 'commands', commands }, entries: items };
}

// ---------------------------------------------------------------- writing

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
  const fromHarbor = task.format === HARBOR_ID;

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

// ---------------------------------------------------------------- the adapter

export const TERMINAL_BENCH: TaskFormatAdapter<typeof TERMINAL_BENCH_ID> = {
  id: TERMINAL_BENCH_ID,
  aliases: ['tb'],
  label: 'Terminal-Bench',
  fullName: 'Terminal-Bench 1.x',
  summary: 'task.yaml, run-tests.sh, solution.sh',
  taskFile: TB_TASK_FILE,
  instructionFile: TB_TASK_FILE,
  structure: TB_STRUCTURE,
  readsAtLoad: [TB_TASK_FILE, 'docker-compose.yaml', 'run-tests.sh', 'solution.yaml', WEIGHTS_FILE, `tests/${WEIGHTS_FILE}`, 'tests', 'solution.sh', 'Dockerfile'],
  confine: { composeFile: 'docker-compose.yaml', contextOrigin: 'docker-compose.yaml', runnerOrigin: 'run-tests.sh', files: [], trees: [] },
  staticCompose: 'docker-compose.yaml',
  verifierScripts: tb1HarnessScriptsFor,
  detect: isTerminalBenchDir,
  read: readTerminalBench,
  write: writeTerminalBench,
  savedRun: {
    environmentDir: '',
    files: (p) => ({
      Dockerfile: p.dockerfile,
      'run-tests.sh': `#!/bin/bash\nexport TEST_DIR="\${TEST_DIR:-/tests}"\n${p.cd}\n${p.pytest}\n`,
      'tests/test_outputs.py': p.tests,
      [WEIGHTS_FILE]: p.weights,
      'solution.sh': p.solution,
      [`solution-${p.changesFile}`]: p.changes,
    }),
  },
  scaffold: {
    metadata: { parser_name: 'pytest', run_tests_in_same_shell: false },
    files: (task, parts) => ({
      'task.yaml': renderTaskYaml(task),
      Dockerfile: parts.dockerfile,
      'docker-compose.yaml': TB_COMPOSE,
      'run-tests.sh': scaffoldRunTests(parts.pytest),
      'tests/test_outputs.py': parts.tests,
      [WEIGHTS_FILE]: parts.weights,
      'solution.sh': parts.solution,
    }),
  },
};

function scaffoldRunTests(pytest: string): string {
  return `#!/bin/bash
# The verifier copies tests/ to $TEST_DIR; the base image has pytest, so nothing is installed.
export TEST_DIR="\${TEST_DIR:-/tests}"
cd /app
${pytest}
`;
}
