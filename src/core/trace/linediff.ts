import { diffArrays } from 'diff';
import type { Hunk } from './types';

/**
 * Beyond this many edits in the part that differs, Myers (O(N·D)) gets slow on big files; we then
 * report the whole differing middle as one replaced block. That over-states the change, which is
 * the conservative direction for provenance (lines are treated as rewritten, never as kept).
 */
const MAX_EDIT_LENGTH = 4000;
/** Same fallback when the diff takes longer than this (ms): a trace must not stall the agent loop. */
const DIFF_TIMEOUT_MS = 250;

/**
 * Splits content into lines where a line keeps its terminator, so "b" (last line without newline)
 * and "b\n" differ, as in `git diff` ("\ No newline at end of file"): adding or removing the final
 * newline changes the last line. A final unterminated fragment counts as a line; "" has 0 lines.
 */
export function splitLines(content: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const nl = content.indexOf('\n', start);
    if (nl < 0) break;
    lines.push(content.slice(start, nl + 1));
    start = nl + 1;
  }
  if (start < content.length) lines.push(content.slice(start));
  return lines;
}

/** Number of lines as `splitLines` counts them, without allocating them. */
export function countLines(content: string): number {
  let n = 0;
  let idx = content.indexOf('\n');
  while (idx >= 0) {
    n++;
    idx = content.indexOf('\n', idx + 1);
  }
  if (content.length > 0 && !content.endsWith('\n')) n++;
  return n;
}

/**
 * Line-level changes from `before` to `after` as unified-diff hunks without context lines: every
 * maximal run of removed and/or added lines is one hunk. 1-based; for a pure insertion oldStart is
 * the old line after which the lines go (0 = top) and oldLines is 0; symmetrically for a pure deletion
 * newStart is the new line after which the lines were removed. Identical content gives [].
 */
export function lineHunks(before: string, after: string): Hunk[] {
  if (before === after) return [];
  const a = splitLines(before);
  const b = splitLines(after);

  // Trimming common prefix/suffix first makes the common case (a small edit in a big file) linear.
  let prefix = 0;
  const minLen = Math.min(a.length, b.length);
  while (prefix < minLen && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < minLen - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;

  const aMid = a.slice(prefix, a.length - suffix);
  const bMid = b.slice(prefix, b.length - suffix);
  if (aMid.length === 0 && bMid.length === 0) return [];
  if (aMid.length === 0 || bMid.length === 0) return [makeHunk(prefix, aMid.length, prefix, bMid.length)];

  // Interning lines as integers makes the diff's equality checks cheap on long lines.
  const ids = new Map<string, number>();
  const intern = (line: string): number => {
    let id = ids.get(line);
    if (id === undefined) {
      id = ids.size;
      ids.set(line, id);
    }
    return id;
  };
  const aIds = aMid.map(intern);
  const oldDistinct = ids.size;
  const bIds = bMid.map(intern);
  // A full rewrite shares no line with the old content: that is one block, no search needed.
  if (!bIds.some((id) => id < oldDistinct)) return [makeHunk(prefix, aMid.length, prefix, bMid.length)];

  const changes = diffArrays(aIds, bIds, { maxEditLength: MAX_EDIT_LENGTH, timeout: DIFF_TIMEOUT_MS });
  if (!changes) return [makeHunk(prefix, aMid.length, prefix, bMid.length)];

  const hunks: Hunk[] = [];
  let oldPos = prefix; // lines of old content consumed so far
  let newPos = prefix;
  let open: { oldAt: number; newAt: number; removed: number; added: number } | undefined;
  const flush = (): void => {
    if (open) hunks.push(makeHunk(open.oldAt, open.removed, open.newAt, open.added));
    open = undefined;
  };
  for (const change of changes) {
    const count = change.count ?? change.value.length;
    if (!change.added && !change.removed) {
      flush();
      oldPos += count;
      newPos += count;
      continue;
    }
    open ??= { oldAt: oldPos, newAt: newPos, removed: 0, added: 0 };
    if (change.removed) {
      open.removed += count;
      oldPos += count;
    } else {
      open.added += count;
      newPos += count;
    }
  }
  flush();
  return hunks;
}

/** `oldBefore`/`newBefore`: number of lines preceding the hunk on each side. */
function makeHunk(oldBefore: number, oldLines: number, newBefore: number, newLines: number): Hunk {
  return {
    oldStart: oldLines === 0 ? oldBefore : oldBefore + 1,
    oldLines,
    newStart: newLines === 0 ? newBefore : newBefore + 1,
    newLines,
  };
}
