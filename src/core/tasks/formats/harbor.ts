import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { FieldReader, authorOf, isPlainObject, parseTomlDoc } from './fields';
import { exists } from './fsutil';
import { readTestWeights } from './weights';
import { readHarborRuntime } from './harbor-runtime';

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
    format: 'harbor',
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
