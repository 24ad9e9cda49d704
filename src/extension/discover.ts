import { open, readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { formatOfListing, type WritableFormat } from '../core/tasks/formats';

/**
 * Finding tasks and runs in a workspace without loading them: the Tasks and Runs views list many
 * entries and must stay fast, so a run is summarised from its header and last line only.
 */
export interface TaskEntry { dir: string; format: WritableFormat; name: string }

export interface RunEntry {
  trajectory: string;
  runId: string;
  taskId: string;
  /** The task directory the run was made from, as recorded in its header. */
  taskDir?: string;
  startedAt: string;
  policy: string;
  /** Undefined when the run has no footer (killed or still running). */
  reward?: number;
  pass?: boolean;
  steps?: number;
  endReason?: string;
}

const SKIP = new Set(['node_modules', '.git', 'dist', 'runs', '.venv', '.venv-ray', '__pycache__']);

export async function findTasks(root: string, maxDepth = 4): Promise<TaskEntry[]> {
  const out: TaskEntry[] = [];
  async function walk(dir: string, depth: number): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    const names = new Set(entries.map((e) => e.name));
    const format = formatOfListing(names);
    if (format) {
      out.push({ dir, format, name: relative(root, dir) || dir });
      return;
    }
    if (depth >= maxDepth) return;
    for (const e of entries) if (e.isDirectory() && !SKIP.has(e.name) && !e.name.startsWith('.')) await walk(join(dir, e.name), depth + 1);
  }
  await walk(root, 0);
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The last line of a file, read from its end (trajectories can be large). */
async function lastLine(path: string): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    let chunk = 64 * 1024;
    for (;;) {
      const start = Math.max(0, size - chunk);
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      const text = buf.toString('utf8').replace(/\n+$/, '');
      const nl = text.lastIndexOf('\n');
      if (nl >= 0 || start === 0) return text.slice(nl + 1);
      chunk *= 4;
    }
  } finally {
    await fh.close();
  }
}

async function firstLine(path: string): Promise<string> {
  const fh = await open(path, 'r');
  try {
    let size = 16 * 1024;
    for (;;) {
      const buf = Buffer.alloc(size);
      const { bytesRead } = await fh.read(buf, 0, size, 0);
      const text = buf.subarray(0, bytesRead).toString('utf8');
      const nl = text.indexOf('\n');
      if (nl >= 0 || bytesRead < size) return nl >= 0 ? text.slice(0, nl) : text;
      size *= 4;
    }
  } finally {
    await fh.close();
  }
}

export async function summariseRun(trajectory: string): Promise<RunEntry | undefined> {
  try {
    const header = JSON.parse(await firstLine(trajectory));
    if (header?.type !== 'header') return undefined;
    const entry: RunEntry = { trajectory, runId: header.runId, taskId: header.task?.id ?? '?', ...(typeof header.task?.dir === 'string' ? { taskDir: header.task.dir } : {}), startedAt: header.startedAt ?? '', policy: header.policy?.model ?? header.policy?.kind ?? '?' };
    try {
      const footer = JSON.parse(await lastLine(trajectory));
      if (footer?.type === 'footer') {
        entry.steps = footer.steps;
        entry.endReason = footer.endReason;
        entry.reward = footer.reward?.total;
        entry.pass = footer.reward ? footer.reward.total >= 1 - 1e-9 : undefined;
      }
    } catch {
      // A cut last line: the run was killed mid-write; it shows as unfinished.
    }
    return entry;
  } catch {
    return undefined;
  }
}

/** The runs directory of a workspace folder: the `tbrl.runsDir` setting, relative to the folder unless absolute. */
export function runsDirOf(folder: string, runsDir: string): string {
  return isAbsolute(runsDir) ? runsDir : join(folder, runsDir);
}

/** Every `<runsDir>/<run>/trajectory.jsonl`, newest first. */
export async function findRuns(runsDir: string): Promise<RunEntry[]> {
  let dirs: string[];
  try {
    dirs = await readdir(runsDir);
  } catch {
    return [];
  }
  const found = await Promise.all(
    dirs.map(async (d) => {
      const p = join(runsDir, d, 'trajectory.jsonl');
      return (await stat(p).catch(() => undefined))?.isFile() ? summariseRun(p) : undefined;
    }),
  );
  return found.filter((r): r is RunEntry => r !== undefined).sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

/**
 * Filter syntax of the Runs view: words match task id, run id or policy; `pass`/`fail`/`unfinished`
 * select by outcome; `reward>=0.5` (or >, <, <=) by reward; `text:foo` searches the actions of each run.
 */
export async function filterRuns(runs: RunEntry[], query: string): Promise<RunEntry[]> {
  const terms = query.trim().split(/\s+/).filter(Boolean);
  const out: RunEntry[] = [];
  for (const r of runs) {
    let ok = true;
    for (const t of terms) {
      const cmp = /^reward(>=|<=|>|<)([0-9.]+)$/.exec(t);
      if (cmp) {
        const x = Number(cmp[2]);
        const v = r.reward;
        ok = v !== undefined && (cmp[1] === '>=' ? v >= x : cmp[1] === '<=' ? v <= x : cmp[1] === '>' ? v > x : v < x);
      } else if (t === 'pass') ok = r.pass === true;
      else if (t === 'fail') ok = r.pass === false;
      else if (t === 'unfinished') ok = r.steps === undefined;
      else if (t.startsWith('text:')) ok = (await readFile(r.trajectory, 'utf8').catch(() => '')).toLowerCase().includes(t.slice(5).toLowerCase());
      else ok = `${r.taskId} ${r.runId} ${r.policy}`.toLowerCase().includes(t.toLowerCase());
      if (!ok) break;
    }
    if (ok) out.push(r);
  }
  return out;
}
