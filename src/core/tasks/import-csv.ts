import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, normalize, resolve, sep } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { Task } from './model';
import { parseCsvObjects } from './csv';
import { exists } from './fsutil';
import { isPlainObject } from './fields';
import { runStaticChecks, type Finding } from './static-checks';
import { renderTaskYaml } from './write';
import { parseTestWeights, serializeTestWeights, WEIGHTS_FILE } from './weights';

/** Columns of the Terminal-Bench-RL dataset CSV. */
export const TBRL_CSV_COLUMNS = [
  'task_id', 'difficulty', 'title', 'use_case_category', 'prompt', 'category', 'tags', 'dockerfile',
  'test_functions', 'test_weights', 'additional_files', 'created_at', 'updated_at',
] as const;
const REQUIRED = ['task_id', 'prompt', 'dockerfile', 'test_functions'] as const;
/** Kept in task.yaml as free-form metadata so nothing in a row is dropped. */
const METADATA_COLUMNS = ['title', 'use_case_category', 'created_at', 'updated_at'] as const;

export const IMPORT_AGENT_TIMEOUT_SEC = 900;
export const IMPORT_TEST_TIMEOUT_SEC = 180;

/**
 * The image may lack pytest (Terminal-Bench-RL images often do): install it only then, so images
 * that have it run offline.
 */
export const IMPORTED_RUNNER = [
  '#!/bin/bash',
  "if ! python3 -c 'import pytest' >/dev/null 2>&1; then",
  '  pip install -q pytest >/dev/null 2>&1 || pip3 install -q --break-system-packages pytest >/dev/null 2>&1',
  'fi',
  'python3 -m pytest -p no:cacheprovider -rA "${TEST_DIR:-/tests}/test_outputs.py"',
  '',
].join('\n');

export interface ImportRowReport {
  /** 1-based CSV line where the row starts. */
  line: number;
  taskId?: string;
  status: 'written' | 'written-with-problems' | 'failed' | 'skipped';
  /** Why it failed or was skipped, or what is wrong with a written task. */
  problems: string[];
  dir?: string;
}

export interface ImportReport {
  file: string;
  outDir: string;
  rows: ImportRowReport[];
  written: number;
  failed: number;
  skipped: number;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Import the Terminal-Bench-RL dataset CSV into Terminal-Bench 1.x task directories under `outDir`. */
export async function importTbrlCsv(file: string, outDir: string, options: { onRow?: (row: ImportRowReport) => void } = {}): Promise<ImportReport> {
  const text = await readFile(file, 'utf8').catch((err) => {
    throw new TbrlError('CSV_NOT_FOUND', `${file}: cannot read the CSV (${errorMessage(err)})`, 'Pass the path of the exported dataset CSV.');
  });
  const { header, rows } = parseCsvObjects(text, file);
  const missing = REQUIRED.filter((c) => !header.includes(c));
  if (missing.length > 0) {
    throw new TbrlError(
      'CSV_COLUMNS',
      `${file}:1: missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (found: ${header.join(', ')})`,
      `The header row must name the Terminal-Bench-RL columns: ${TBRL_CSV_COLUMNS.join(',')}`,
    );
  }
  await mkdir(outDir, { recursive: true });
  const seen = new Set<string>();
  const report: ImportReport = { file, outDir: resolve(outDir), rows: [], written: 0, failed: 0, skipped: 0 };
  for (const row of rows) {
    const result = await importRow(row, header.length, resolve(outDir), seen);
    report.rows.push(result);
    if (result.status === 'failed') report.failed++;
    else if (result.status === 'skipped') report.skipped++;
    else report.written++;
    options.onRow?.(result);
  }
  return report;
}

async function importRow(
  row: { line: number; values: Record<string, string>; width: number },
  columns: number,
  outDir: string,
  seen: Set<string>,
): Promise<ImportRowReport> {
  const v = row.values;
  const id = v.task_id?.trim();
  const fail = (...problems: string[]): ImportRowReport => ({ line: row.line, taskId: id || undefined, status: 'failed', problems });
  if (row.width !== columns) return fail(`the row has ${row.width} fields but the header has ${columns} (an unquoted comma or newline inside a field?)`);
  const empty = REQUIRED.filter((c) => !v[c]?.trim());
  if (empty.length > 0) return fail(`empty required field${empty.length > 1 ? 's' : ''}: ${empty.join(', ')}`);
  if (!SAFE_ID.test(id)) return fail(`task_id ${JSON.stringify(id)} is not a safe directory name (letters, digits, '.', '_', '-'; no '/')`);
  if (seen.has(id)) return fail(`task_id ${id} appears on an earlier row; it was imported from there`);
  seen.add(id);
  const dir = join(outDir, id);
  if (await exists(dir)) return { line: row.line, taskId: id, status: 'skipped', problems: [`${dir} already exists; it was left untouched`] };

  const problems: string[] = [];
  let weights: Record<string, number> | undefined;
  if (v.test_weights?.trim()) {
    try {
      weights = parseTestWeights(`row ${row.line} test_weights`, v.test_weights);
    } catch (err) {
      return fail(errorMessage(err).split('\n')[0]);
    }
  } else {
    problems.push('no test_weights: every test weighs the same');
  }

  let additional: [string, string][] = [];
  if (v.additional_files?.trim()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v.additional_files);
    } catch (err) {
      return fail(`additional_files is not valid JSON: ${errorMessage(err)}`);
    }
    if (!isPlainObject(parsed)) return fail('additional_files must be a JSON object mapping relative paths to file contents');
    for (const [path, content] of Object.entries(parsed)) {
      const clean = normalize(path);
      if (clean.startsWith('..') || clean.startsWith(sep) || clean === '.' || ['task.yaml', 'tests', 'run-tests.sh', 'Dockerfile', WEIGHTS_FILE].includes(clean.split(sep)[0])) {
        return fail(`additional_files path ${JSON.stringify(path)} must stay inside the task and not replace task.yaml, Dockerfile, run-tests.sh, tests/ or test_weights.json`);
      }
      if (typeof content !== 'string') return fail(`additional_files[${JSON.stringify(path)}] must be a string of file content`);
      additional.push([clean, content]);
    }
  }
  additional = additional.sort(([a], [b]) => a.localeCompare(b));

  const difficulty = v.difficulty?.trim() || undefined;
  const metadata: Record<string, unknown> = { parser_name: 'pytest', run_tests_in_same_shell: false };
  // Terminal-Bench knows easy/medium/hard only; Terminal-Bench-RL's extra level maps to hard.
  if (difficulty === 'extremely_hard') metadata.original_difficulty = difficulty;
  for (const c of METADATA_COLUMNS) if (v[c]?.trim()) metadata[c] = v[c];

  const task: Task = {
    id,
    dir,
    format: 'terminal-bench',
    instruction: v.prompt.replace(/\s+$/, ''),
    difficulty: difficulty === 'extremely_hard' ? 'hard' : difficulty,
    category: v.category?.trim() || undefined,
    tags: parseTags(v.tags ?? ''),
    environment: { context: dir, dockerfile: 'Dockerfile' },
    agentTimeoutSec: IMPORT_AGENT_TIMEOUT_SEC,
    testTimeoutSec: IMPORT_TEST_TIMEOUT_SEC,
    allowInternet: true,
    tests: { runner: join(dir, 'run-tests.sh'), dir: join(dir, 'tests'), kind: 'pytest-summary' },
    testWeights: weights,
    extra: { metadata },
  };

  // Write into a staging directory and rename, so a failure never leaves half a task behind.
  const staging = `${dir}.importing-${process.pid}`;
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(join(staging, 'tests'), { recursive: true });
    await writeFile(join(staging, 'task.yaml'), renderTaskYaml(task));
    await writeFile(join(staging, 'Dockerfile'), ensureNewline(v.dockerfile));
    await writeFile(join(staging, 'tests', 'test_outputs.py'), ensureNewline(v.test_functions));
    await writeFile(join(staging, 'run-tests.sh'), IMPORTED_RUNNER);
    await chmod(join(staging, 'run-tests.sh'), 0o755);
    if (weights) await writeFile(join(staging, WEIGHTS_FILE), serializeTestWeights(weights));
    for (const [path, content] of additional) {
      await mkdir(dirname(join(staging, path)), { recursive: true });
      await writeFile(join(staging, path), content);
    }
    await rename(staging, dir);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    return fail(`writing the task failed: ${errorMessage(err)}`);
  }

  const findings: Finding[] = runStaticChecks({
    agentTimeoutSec: task.agentTimeoutSec,
    testTimeoutSec: task.testTimeoutSec,
    testWeights: weights,
    testsKind: 'pytest-summary',
    dockerfile: { path: 'Dockerfile', content: v.dockerfile },
    testFiles: [{ path: 'tests/test_outputs.py', content: v.test_functions }],
    solutionNames: [],
  });
  problems.push(...findings.map((f) => `${f.severity}: ${f.message}`));
  problems.push('no reference solution in the CSV: `tbrl validate` cannot run the oracle until solution.sh is added');
  return { line: row.line, taskId: id, status: findings.some((f) => f.severity === 'error') ? 'written-with-problems' : 'written', problems, dir };
}

/** Terminal-Bench-RL writes tags pipe-separated; JSON lists and commas also occur in exports. */
export function parseTags(raw: string): string[] {
  const text = raw.trim();
  if (!text) return [];
  if (text.startsWith('[')) {
    try {
      const list: unknown = JSON.parse(text);
      if (Array.isArray(list)) return list.map(String).map((t) => t.trim()).filter(Boolean);
    } catch {
      // fall through to splitting
    }
  }
  return text.split(/[|,]/).map((t) => t.trim()).filter(Boolean);
}

function ensureNewline(text: string): string {
  const unix = text.replace(/\r\n/g, '\n');
  return unix.endsWith('\n') ? unix : `${unix}\n`;
}
