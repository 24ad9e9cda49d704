import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { DEFAULT_TASK_FORMAT, requireTaskFormat, type WritableFormat } from './formats';
import { serializeTestWeights } from './weights';

/** Terminal-Bench's Python base; offline, the sandbox substitutes its stand-in (python3 + pytest). */
export const SCAFFOLD_BASE_IMAGE = 'ghcr.io/laude-institute/t-bench/python-3-13:20250620';

export const SCAFFOLD_INSTRUCTION = [
  'Create /app/greeting.txt containing exactly one line: `Hello, world!`',
  'Then create /app/length.txt containing the number of characters in that line (without the newline), as a decimal number.',
].join('\n');

const TESTS = `"""Tests for the scaffolded task: edit them together with the instruction and the reference solution."""
from pathlib import Path

GREETING = Path("/app/greeting.txt")
LENGTH = Path("/app/length.txt")


def test_greeting_exists():
    assert GREETING.is_file()


def test_greeting_content():
    assert GREETING.read_text().splitlines() == ["Hello, world!"]


def test_length_matches():
    line = GREETING.read_text().splitlines()[0]
    assert LENGTH.read_text().strip() == str(len(line))
`;

const WEIGHTS = { test_greeting_exists: 0.2, test_greeting_content: 0.5, test_length_matches: 0.3 };

const SOLUTION = `#!/bin/bash
set -euo pipefail
printf 'Hello, world!\\n' > /app/greeting.txt
head -n1 /app/greeting.txt | tr -d '\\n' | wc -c | tr -d ' ' > /app/length.txt
`;

const DOCKERFILE = `FROM ${SCAFFOLD_BASE_IMAGE}

WORKDIR /app
`;

export { TB_COMPOSE } from './formats/terminal-bench';

const PYTEST = 'python3 -m pytest -p no:cacheprovider -rA "$TEST_DIR/test_outputs.py"';

export interface ScaffoldOptions {
  format?: WritableFormat;
  instruction?: string;
  author?: { name?: string; email?: string };
}

/**
 * A new task directory that validates as it is: the oracle passes every weighted test and an agent
 * that does nothing passes none. A custom instruction replaces the text only; tests and solution
 * stay the template until edited.
 */
export async function scaffoldTask(dir: string, options: ScaffoldOptions = {}): Promise<{ dir: string; format: WritableFormat; files: string[] }> {
  const abs = resolve(dir);
  const existing = await readdir(abs).catch(() => [] as string[]);
  if (existing.length > 0) {
    throw new TbrlError('TASK_WRITE_NOT_EMPTY', `${abs}: directory is not empty`, 'Choose a new directory for the task; tbrl new-task never overwrites files.');
  }
  const format = options.format ?? DEFAULT_TASK_FORMAT;
  const adapter = requireTaskFormat(format);
  const id = basename(abs);
  const task: Task = {
    id,
    dir: abs,
    format,
    instruction: options.instruction?.trim() || SCAFFOLD_INSTRUCTION,
    difficulty: 'easy',
    category: 'file-operations',
    tags: ['scaffold'],
    author: options.author,
    environment: { context: abs, dockerfile: 'Dockerfile' },
    agentTimeoutSec: 300,
    testTimeoutSec: 60,
    allowInternet: true,
    tests: { runner: join(abs, 'run-tests.sh'), dir: join(abs, 'tests'), kind: 'pytest-summary' },
    testWeights: WEIGHTS,
    extra: { metadata: { ...adapter.scaffold.metadata } },
  };
  const files = adapter.scaffold.files(task, { dockerfile: DOCKERFILE, tests: TESTS, weights: serializeTestWeights(WEIGHTS), solution: SOLUTION, pytest: PYTEST });
  for (const [path, content] of Object.entries(files)) {
    const target = join(abs, path);
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, content);
    if (path.endsWith('.sh')) await chmod(target, 0o755);
  }
  return { dir: abs, format, files: Object.keys(files).sort() };
}
