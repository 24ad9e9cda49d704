import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import picomatch from 'picomatch';
import { TbrlError, errorMessage } from '../errors';
import { detectTaskFormat } from '../tasks/load';

/**
 * Where an eval's tasks come from. Each input is one of:
 * - a task directory (task.yaml or task.toml in it);
 * - a dataset directory: any tree holding task directories — Harbor's downloaded layout
 *   (`<dataset>/<task>/task.toml`, possibly under a version or hash folder), a Terminal-Bench 1.x
 *   `tasks/` tree, a folder of synthesised Tev tasks;
 * - a glob (`tasks/*`, `data/**`) whose matches are task or dataset directories;
 * - a list file: one path per line (relative to the file), `#` comments, blank lines ignored.
 */
export interface TaskSourceOptions {
  cwd?: string;
  /** Keep only tasks whose id or directory name matches one of these globs. */
  include?: string[];
  exclude?: string[];
  /** The first N tasks after filtering, in id order. */
  nTasks?: number;
}

export interface TaskSource {
  /** Directory name: unique within a job (the task's own id may repeat across datasets). */
  name: string;
  dir: string;
}

/** How deep a dataset directory is searched for task directories (dataset/version/hash/task). */
const MAX_DATASET_DEPTH = 5;
const SKIP_DIRS = new Set(['node_modules', '.git', '__pycache__', '.venv', 'runs', 'jobs']);
const GLOB_CHARS = /[*?[\]{}]/;

export async function resolveTaskSources(inputs: string[], options: TaskSourceOptions = {}): Promise<TaskSource[]> {
  const cwd = options.cwd ?? process.cwd();
  if (inputs.length === 0) throw new TbrlError('eval-no-tasks', 'No tasks given.', 'Pass task directories, a dataset directory, a glob or a list file, e.g. `tbrl eval tasks/ --attempts 3`.');
  const dirs: string[] = [];
  for (const input of inputs) dirs.push(...(await expandInput(input, cwd, 0)));
  const seen = new Set<string>();
  const unique = dirs.filter((d) => (seen.has(d) ? false : (seen.add(d), true)));
  let sources = nameSources(unique);
  const include = options.include?.length ? picomatch(options.include) : undefined;
  const exclude = options.exclude?.length ? picomatch(options.exclude) : undefined;
  sources = sources.filter((s) => (!include || include(s.name)) && !(exclude && exclude(s.name)));
  sources.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (options.nTasks !== undefined) sources = sources.slice(0, options.nTasks);
  if (sources.length === 0) {
    throw new TbrlError('eval-no-tasks', `No task directories found in ${inputs.join(', ')}${include || exclude ? ' after --include/--exclude' : ''}.`, 'A task directory holds task.yaml (Terminal-Bench) or task.toml (Harbor); check the paths and the filters.');
  }
  return sources;
}

async function expandInput(input: string, cwd: string, listDepth: number): Promise<string[]> {
  const abs = resolve(cwd, input);
  if (GLOB_CHARS.test(input)) return expandGlob(input, cwd);
  const info = await stat(abs).catch(() => undefined);
  if (!info) throw new TbrlError('eval-source-missing', `${abs}: no such file or directory.`, 'Pass a task directory, a dataset directory, a glob or a list file of task paths.');
  if (info.isFile()) {
    if (listDepth > 0) throw new TbrlError('eval-list-nested', `${abs} is a file listed inside another list file.`, 'A list file names task or dataset directories, not other list files.');
    const lines = (await readFile(abs, 'utf8')).split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    const out: string[] = [];
    for (const line of lines) out.push(...(await expandInput(line, dirname(abs), listDepth + 1)));
    return out;
  }
  const found = await findTaskDirs(abs, 0);
  if (found.length === 0) throw new TbrlError('eval-no-tasks', `${abs} holds no task directory (no task.yaml or task.toml within ${MAX_DATASET_DEPTH} levels).`, 'Point at a task directory or a folder of them.');
  return found;
}

async function findTaskDirs(dir: string, depth: number): Promise<string[]> {
  if (await detectTaskFormat(dir)) return [dir];
  if (depth >= MAX_DATASET_DEPTH) return [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new TbrlError('eval-source-unreadable', `${dir}: cannot list (${errorMessage(err)}).`, 'Check the permissions of the dataset directory.');
  }
  const out: string[] = [];
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!e.isDirectory() || e.name.startsWith('.') || SKIP_DIRS.has(e.name)) continue;
    out.push(...(await findTaskDirs(join(dir, e.name), depth + 1)));
  }
  return out;
}

/** Globs are matched against paths under their static prefix (the part before the first wildcard). */
async function expandGlob(pattern: string, cwd: string): Promise<string[]> {
  const absPattern = isAbsolute(pattern) ? pattern : join(cwd, pattern);
  const parts = absPattern.split(sep);
  const firstWild = parts.findIndex((p) => GLOB_CHARS.test(p));
  const root = parts.slice(0, firstWild).join(sep) || sep;
  const match = picomatch(parts.slice(firstWild).join('/'), { dot: false });
  const maxDepth = pattern.includes('**') ? MAX_DATASET_DEPTH : parts.length - firstWild;
  const matched: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > maxDepth) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory() || SKIP_DIRS.has(e.name)) continue;
      const abs = join(dir, e.name);
      if (match(relative(root, abs).split(sep).join('/'))) matched.push(abs);
      else await walk(abs, depth + 1);
    }
  };
  await walk(root, 1);
  const out: string[] = [];
  for (const m of matched.sort()) out.push(...(await findTaskDirs(m, 0)));
  return out;
}

/** Directory names as task names; a clash (two datasets with the same task name) adds the parent's name. */
function nameSources(dirs: string[]): TaskSource[] {
  const base = (d: string, levels: number): string => d.split(sep).filter(Boolean).slice(-levels).join('__');
  const named = dirs.map((dir) => ({ dir, name: base(dir, 1) }));
  for (let levels = 2; levels <= 4; levels++) {
    const counts = new Map<string, number>();
    for (const s of named) counts.set(s.name, (counts.get(s.name) ?? 0) + 1);
    let clash = false;
    for (const s of named) if ((counts.get(s.name) ?? 0) > 1) {
      s.name = base(s.dir, levels);
      clash = true;
    }
    if (!clash) break;
  }
  return named.map((s) => ({ dir: s.dir, name: s.name.replace(/[^A-Za-z0-9._-]+/g, '-') }));
}
