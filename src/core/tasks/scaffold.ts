import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { renderTaskToml, renderTaskYaml, weightedRewardTestSh, type WritableFormat } from './write';
import { serializeTestWeights, WEIGHTS_FILE } from './weights';

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

const PYTEST = 'python3 -m pytest -p no:cacheprovider -rA "$TEST_DIR/test_outputs.py"';

const RUN_TESTS = `#!/bin/bash
# The verifier copies tests/ to $TEST_DIR; the base image has pytest, so nothing is installed.
export TEST_DIR="\${TEST_DIR:-/tests}"
cd /app
${PYTEST}
`;

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
  const format = options.format ?? 'terminal-bench';
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
    extra: { metadata: format === 'terminal-bench' ? { parser_name: 'pytest', run_tests_in_same_shell: false } : {} },
  };
  const files: Record<string, string> =
    format === 'terminal-bench'
      ? {
          'task.yaml': renderTaskYaml(task),
          Dockerfile: DOCKERFILE,
          'docker-compose.yaml': TB_COMPOSE,
          'run-tests.sh': RUN_TESTS,
          'tests/test_outputs.py': TESTS,
          [WEIGHTS_FILE]: serializeTestWeights(WEIGHTS),
          'solution.sh': SOLUTION,
        }
      : {
          'task.toml': renderTaskToml(task),
          'instruction.md': `${task.instruction}\n`,
          'environment/Dockerfile': DOCKERFILE,
          'tests/test.sh': weightedRewardTestSh(`(cd /app && ${PYTEST})`, 'Runs the pytest file and writes the weighted score of test_weights.json to /logs/verifier/reward.txt.'),
          'tests/test_outputs.py': TESTS,
          [`tests/${WEIGHTS_FILE}`]: serializeTestWeights(WEIGHTS),
          'solution/solve.sh': SOLUTION,
        };
  for (const [path, content] of Object.entries(files)) {
    const target = join(abs, path);
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, content);
    if (path.endsWith('.sh')) await chmod(target, 0o755);
  }
  return { dir: abs, format, files: Object.keys(files).sort() };
}
