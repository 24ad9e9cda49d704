import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { TaskValidation } from './validate';

/**
 * The last validation of each task, kept per workspace so the editor's Tasks view (and anyone
 * reading `.tbrl/`) can say "valid / INVALID" without re-running Docker. `tbrl validate` and the
 * editor's Validate Task both write it. Paths are stored relative to the workspace root, so the
 * file stays true when the workspace moves.
 */
export const VALIDATIONS_FILE = join('.tbrl', 'validations.json');

export interface ValidationRecord {
  /** Absolute task directory (relative in the file). */
  path: string;
  id?: string;
  valid: boolean;
  at: string;
  oracle: { status: string; score?: number };
  empty: { status: string; score?: number };
  /** First lines of the first problems, for a tooltip. */
  problems: string[];
  durationMs: number;
}

interface StoredFile {
  version: 1;
  tasks: Record<string, Omit<ValidationRecord, 'path'>>;
}

export interface ReadValidations {
  /** By absolute task directory. */
  records: Map<string, ValidationRecord>;
  /** Why the file could not be used, if it exists but is not a validations file. */
  problem?: string;
}

export function readValidations(root: string): ReadValidations {
  const file = join(root, VALIDATIONS_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { records: new Map() };
  }
  let parsed: StoredFile;
  try {
    parsed = JSON.parse(text) as StoredFile;
  } catch (err) {
    return { records: new Map(), problem: `${file} is not valid JSON (${(err as Error).message}); the next validation keeps it as ${file}.corrupt and starts a new one.` };
  }
  if (parsed?.version !== 1 || typeof parsed.tasks !== 'object' || parsed.tasks === null) {
    return { records: new Map(), problem: `${file} is not a version-1 validations file; the next validation keeps it as ${file}.corrupt and starts a new one.` };
  }
  const records = new Map<string, ValidationRecord>();
  for (const [rel, r] of Object.entries(parsed.tasks)) {
    if (typeof r !== 'object' || r === null || typeof r.valid !== 'boolean') continue;
    const path = resolve(root, rel);
    records.set(path, { ...r, path });
  }
  return { records };
}

/**
 * Merges the results into the root's validations file (a task validated again replaces its old
 * record). A file that cannot be parsed is moved aside, never overwritten, so nothing is lost.
 */
export function recordValidations(root: string, results: readonly TaskValidation[], now = new Date()): string {
  const file = join(root, VALIDATIONS_FILE);
  const existing = readValidations(root);
  if (existing.problem) renameSync(file, `${file}.corrupt`);
  const tasks: StoredFile['tasks'] = {};
  for (const r of existing.records.values()) {
    const { path, ...rest } = r;
    tasks[key(root, path)] = rest;
  }
  for (const r of results) {
    const path = resolve(root, r.path);
    tasks[key(root, path)] = {
      ...(r.id ? { id: r.id } : {}),
      valid: r.valid,
      at: now.toISOString(),
      oracle: scored(r.oracle),
      empty: scored(r.empty),
      problems: r.problems.slice(0, 3).map((p) => p.split('\n')[0]),
      durationMs: r.durationMs,
    };
  }
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ version: 1, tasks } satisfies StoredFile, null, 2)}\n`);
  renameSync(tmp, file);
  return file;
}

function scored(s: { status: string; score?: number }): { status: string; score?: number } {
  return s.score === undefined ? { status: s.status } : { status: s.status, score: s.score };
}

/** Inside the root: a relative path; elsewhere (a task outside the workspace) the absolute one. */
function key(root: string, path: string): string {
  const rel = relative(root, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : rel === '' ? '.' : path;
}
