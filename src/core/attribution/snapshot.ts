import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { errorMessage } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { StepRecord } from '../trajectory/schema';
import { readThroughArchive, type FileContent } from '../trace/file-content';
import { changedFiles } from './lines';
import type { OriginalSource } from './originals';

/** Container path `/app/x.py` is stored at `<run>/files/app/x.py`; the index sits beside, so no container path can collide with it. */
export const SNAPSHOT_DIR = 'files';
/** The same path as the image had it, at `<run>/originals/app/x.py`. */
export const ORIGINALS_DIR = 'originals';
export const SNAPSHOT_INDEX = 'files-index.json';
/** Final and original bytes together count against `totalBytes`. */
export const SNAPSHOT_LIMITS = { totalBytes: 20 * 1024 * 1024, fileBytes: 2 * 1024 * 1024 };

/** `absent`: the image had no such file (the agent created it), so the diff is against nothing. */
export type OriginalRecord = { status: 'stored'; bytes: number } | { status: 'absent' } | { status: 'skipped'; reason: string };

export interface SnapshotIndex {
  version: 1;
  /** `original` is missing in runs made before originals were kept. */
  files: Array<{ path: string; bytes: number; lastStep: number; original?: OriginalRecord }>;
  skipped: Array<{ path: string; reason: string }>;
}

/** Files read per round trip when the sandbox reads many at once (each up to MAX_DIFF_BYTES in memory). */
const READ_BATCH = 8;

/** The sandbox as the snapshot reads it: `readFiles` (a traced sandbox's) reads many paths per round trip. */
export type SnapshotSource = Pick<Sandbox, 'getArchive'> & { readFiles?: (paths: readonly string[]) => Promise<PromiseSettledResult<FileContent>[]> };

export interface SnapshotOptions {
  limits?: typeof SNAPSHOT_LIMITS;
  /** Where each saved file's original comes from; without one no originals are recorded. The caller closes it. */
  originals?: OriginalSource;
}

/**
 * Copies every file a traced command wrote out of the container at the end of the run, so the
 * editor can show the final content (with per-line attribution) after the container is gone, and
 * the same file as it was before the run, so it can show the change as a diff. Bounded: a file
 * over the per-file limit, or one that would push the total over its limit, is skipped and the
 * index says why. Final contents are taken first: an original is only worth having beside one.
 */
export async function snapshotChangedFiles(sandbox: SnapshotSource, steps: StepRecord[], runDir: string, options: SnapshotOptions = {}): Promise<SnapshotIndex> {
  const limits = options.limits ?? SNAPSHOT_LIMITS;
  const index: SnapshotIndex = { version: 1, files: [], skipped: [] };
  let total = 0;
  const changed = changedFiles(steps);
  const wanted = changed.filter((f) => !f.deleted && safeRelative(f.path)).map((f) => f.path);
  const reads = new Map<string, Promise<FileContent>>();
  const read = (path: string): Promise<FileContent> => {
    if (!sandbox.readFiles) return readThroughArchive((p) => sandbox.getArchive(p), path);
    if (!reads.has(path)) {
      // The next few paths in one round trip; a batch at a time bounds what is held in memory.
      const batch = wanted.slice(wanted.indexOf(path), wanted.indexOf(path) + READ_BATCH);
      const answers = sandbox.readFiles(batch);
      batch.forEach((p, i) => {
        const answer = answers.then((a) => (a[i].status === 'fulfilled' ? a[i].value : Promise.reject(a[i].reason)));
        // Awaited in order below; until then a failed batch must not count as an unhandled rejection.
        answer.catch(() => undefined);
        reads.set(p, answer);
      });
    }
    return reads.get(path)!;
  };
  for (const f of changed) {
    if (f.deleted) {
      index.skipped.push({ path: f.path, reason: 'deleted by the agent' });
      continue;
    }
    const relative = safeRelative(f.path);
    if (!relative) {
      index.skipped.push({ path: f.path, reason: 'not an absolute container path' });
      continue;
    }
    try {
      const content = await read(f.path);
      reads.delete(f.path);
      if (content.kind === 'absent') index.skipped.push({ path: f.path, reason: 'no longer exists in the container' });
      else if (content.kind === 'other') index.skipped.push({ path: f.path, reason: `not a regular file (${content.why})` });
      else if (content.content.length > limits.fileBytes) index.skipped.push({ path: f.path, reason: `${content.content.length} bytes, over the ${limits.fileBytes}-byte per-file limit` });
      else if (total + content.content.length > limits.totalBytes) index.skipped.push({ path: f.path, reason: `would exceed the ${limits.totalBytes}-byte snapshot limit` });
      else {
        const out = join(runDir, SNAPSHOT_DIR, relative);
        mkdirSync(dirname(out), { recursive: true });
        writeFileSync(out, content.content);
        total += content.content.length;
        index.files.push({ path: f.path, bytes: content.content.length, lastStep: f.lastStep });
      }
    } catch (err) {
      index.skipped.push({ path: f.path, reason: `could not be read: ${errorMessage(err)}` });
    }
  }
  if (options.originals) {
    for (const f of index.files) {
      f.original = await storeOriginal(options.originals, f.path, runDir, limits, total);
      if (f.original.status === 'stored') total += f.original.bytes;
    }
  }
  mkdirSync(runDir, { recursive: true });
  writeFileSync(join(runDir, SNAPSHOT_INDEX), JSON.stringify(index, null, 2) + '\n');
  return index;
}

async function storeOriginal(source: OriginalSource, path: string, runDir: string, limits: typeof SNAPSHOT_LIMITS, total: number): Promise<OriginalRecord> {
  try {
    const content = await source.read(path);
    if (content.kind === 'absent') return { status: 'absent' };
    if (content.kind === 'unknown') return { status: 'skipped', reason: content.why };
    if (content.kind === 'other') return { status: 'skipped', reason: `not a regular file in the image (${content.why})` };
    const bytes = content.content.length;
    if (bytes > limits.fileBytes) return { status: 'skipped', reason: `${bytes} bytes, over the ${limits.fileBytes}-byte per-file limit` };
    if (total + bytes > limits.totalBytes) return { status: 'skipped', reason: `would exceed the ${limits.totalBytes}-byte snapshot limit` };
    // Only files whose final content was saved get here, so the path is a safe container path.
    const out = originalFilePath(runDir, path)!;
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, content.content);
    return { status: 'stored', bytes };
  } catch (err) {
    return { status: 'skipped', reason: `could not be read: ${errorMessage(err)}` };
  }
}

/** The index of a run directory, or undefined when the run predates snapshots or the index is unreadable. */
export function readSnapshotIndex(runDir: string): SnapshotIndex | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(runDir, SNAPSHOT_INDEX), 'utf8')) as SnapshotIndex;
    return Array.isArray(parsed?.files) && Array.isArray(parsed?.skipped) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Where the snapshot of container path `path` lives, or undefined for a path that would escape the run directory. */
export function snapshotFilePath(runDir: string, path: string): string | undefined {
  const relative = safeRelative(path);
  return relative ? join(runDir, SNAPSHOT_DIR, relative) : undefined;
}

/** Where the original of container path `path` lives (same rules as `snapshotFilePath`). */
export function originalFilePath(runDir: string, path: string): string | undefined {
  const relative = safeRelative(path);
  return relative ? join(runDir, ORIGINALS_DIR, relative) : undefined;
}

/**
 * How the editor shows a changed file: a diff against its original (`empty` when the agent
 * created it), the final content alone when no original was kept (with why), or nothing.
 */
export type ChangedFileView =
  | { kind: 'diff'; original: 'stored' | 'empty' }
  | { kind: 'alone'; why: string }
  | { kind: 'missing'; why: string };

export function changedFileView(index: SnapshotIndex | undefined, path: string): ChangedFileView {
  const saved = index?.files.find((f) => f.path === path);
  if (!saved) {
    const why = index?.skipped.find((s) => s.path === path)?.reason ?? (index ? 'no traced command of the run wrote it' : 'it was not saved with the run (runs made before changed files were kept have none)');
    return { kind: 'missing', why };
  }
  const o = saved.original;
  if (!o) return { kind: 'alone', why: 'the run was made before the original content of changed files was kept' };
  if (o.status === 'stored') return { kind: 'diff', original: 'stored' };
  if (o.status === 'absent') return { kind: 'diff', original: 'empty' };
  return { kind: 'alone', why: `its original was not kept: ${o.reason}` };
}

function safeRelative(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const normal = posix.normalize(path).replace(/^\/+/, '');
  return normal && !normal.split('/').includes('..') ? normal : undefined;
}
