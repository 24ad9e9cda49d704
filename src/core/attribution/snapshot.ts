import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { errorMessage } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { StepRecord } from '../trajectory/schema';
import { readThroughArchive } from '../trace/file-content';
import { changedFiles } from './lines';

/** Container path `/app/x.py` is stored at `<run>/files/app/x.py`; the index sits beside, so no container path can collide with it. */
export const SNAPSHOT_DIR = 'files';
export const SNAPSHOT_INDEX = 'files-index.json';
export const SNAPSHOT_LIMITS = { totalBytes: 20 * 1024 * 1024, fileBytes: 2 * 1024 * 1024 };

export interface SnapshotIndex {
  version: 1;
  files: Array<{ path: string; bytes: number; lastStep: number }>;
  skipped: Array<{ path: string; reason: string }>;
}

/**
 * Copies every file a traced command wrote out of the container at the end of the run, so the
 * editor can show the final content (with per-line attribution) after the container is gone.
 * Bounded: a file over the per-file limit, or one that would push the total over its limit, is
 * skipped and the index says why.
 */
export async function snapshotChangedFiles(sandbox: Pick<Sandbox, 'getArchive'>, steps: StepRecord[], runDir: string, limits = SNAPSHOT_LIMITS): Promise<SnapshotIndex> {
  const index: SnapshotIndex = { version: 1, files: [], skipped: [] };
  let total = 0;
  for (const f of changedFiles(steps)) {
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
      const content = await readThroughArchive((p) => sandbox.getArchive(p), f.path);
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
  mkdirSync(runDir, { recursive: true });
  writeFileSync(join(runDir, SNAPSHOT_INDEX), JSON.stringify(index, null, 2) + '\n');
  return index;
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

function safeRelative(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const normal = posix.normalize(path).replace(/^\/+/, '');
  return normal && !normal.split('/').includes('..') ? normal : undefined;
}
