import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { FieldReader, authorOf, isPlainObject, parseYamlDoc } from './fields';
import { exists } from './fsutil';
import { LAYOUT_STASH_KEY } from './harbor';
import { readTestWeights } from './weights';

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
    format: 'terminal-bench',
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
