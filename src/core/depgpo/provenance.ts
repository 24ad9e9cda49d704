import type { FileWrite, Hunk } from '../trace/types';

/** Owner of lines whose writer is unknown (task files, untraced changes): they never create edges. */
export const NO_OWNER = -1;

/**
 * Line provenance per file, carried through later edits: for every line currently in a file, the
 * command that last wrote it. Stored as run-length intervals (owner, length), so a 10,000-line file
 * written once is one interval, and an edit costs O(intervals in that file), not O(lines).
 *
 * Applying a write's hunks (old-content coordinates, in order): lines a hunk replaces or deletes
 * disappear, lines it inserts or replaces become owned by the writer, every other line keeps its
 * owner — so a line written by c1 survives an insertion above it (it only moves down).
 *
 * Every line that disappears is recorded as a removal event (owner, file, time, count); at the end
 * `finish` records the survivors with time = verification. These events are exactly what the write
 * score needs: a line's lifetime is [writer, removal time).
 */
export class Provenance {
  private readonly files = new Map<string, FileLines>();
  private readonly ids = new Map<string, number>();
  readonly paths: string[] = [];
  /** Removal events, struct-of-arrays to keep 10^6-line trajectories cheap. */
  readonly evOwner: number[] = [];
  readonly evFile: number[] = [];
  readonly evTime: number[] = [];
  readonly evCount: number[] = [];

  constructor(private readonly warn: (message: string) => void) {}

  fileId(path: string): number {
    let id = this.ids.get(path);
    if (id === undefined) {
      id = this.paths.length;
      this.ids.set(path, id);
      this.paths.push(path);
    }
    return id;
  }

  /** Commands that own at least one line of `path` right now. */
  ownersOf(path: string): Iterable<number> {
    return this.files.get(path)?.counts.keys() ?? [];
  }

  /** Current owners of `path`, top to bottom, as run-length intervals (copies; for per-line attribution in the editor). */
  intervalsOf(path: string): Array<{ owner: number; length: number }> {
    const state = this.files.get(path);
    return state ? state.owners.map((owner, i) => ({ owner, length: state.lengths[i] })) : [];
  }

  /** Applies one FileWrite of command `writer` (execution index). Returns the number of lines it wrote. */
  apply(writer: number, write: FileWrite): number {
    const fileId = this.fileId(write.path);
    let state = this.files.get(write.path);
    const hunks = this.validHunks(writer, write);

    if (write.deleted) {
      if (state) this.drop(state, fileId, writer);
      this.files.delete(write.path);
      return 0;
    }
    if (write.created && state && state.total > 0) {
      // The file vanished without a traced command deleting it; whatever we tracked is gone.
      this.drop(state, fileId, writer);
      state = undefined;
    }
    const growth = hunks.reduce((sum, h) => sum + h.newLines - h.oldLines, 0);
    const expectedOld = Number.isFinite(write.linesAfter) && write.linesAfter >= 0 ? write.linesAfter - growth : (state?.total ?? 0);
    if (!state) {
      state = new FileLines();
      this.files.set(write.path, state);
      // Lines that were there before any traced write belong to nobody (task files, images).
      if (expectedOld > 0) state.push(NO_OWNER, expectedOld);
    } else if (state.total !== expectedOld && expectedOld >= 0) {
      // Someone changed the file untraced (or the trace is partial). Keep the lines we know about at
      // the top, unowned padding or a cut at the bottom: the conservative guess never invents provenance.
      this.warn(`command ${writer}: ${write.path} had ${state.total} tracked lines but the write implies ${expectedOld}; reconciled.`);
      if (state.total < expectedOld) state.push(NO_OWNER, expectedOld - state.total);
      else this.truncate(state, expectedOld, fileId, writer);
    }
    return this.rewrite(state, hunks, writer, fileId);
  }

  /** Records every surviving owned line as an event at `time` (the verification). */
  finish(time: number): void {
    for (const [path, state] of this.files) {
      const fileId = this.fileId(path);
      for (let i = 0; i < state.owners.length; i++) this.event(state.owners[i], fileId, time, state.lengths[i]);
    }
  }

  private validHunks(writer: number, write: FileWrite): Hunk[] {
    const raw = Array.isArray(write.hunks) ? write.hunks : [];
    const good = raw.filter((h) => h && [h.oldStart, h.oldLines, h.newLines].every((v) => Number.isInteger(v) && v >= 0));
    if (good.length !== raw.length) this.warn(`command ${writer}: ${write.path}: ${raw.length - good.length} malformed hunk(s) ignored.`);
    return good.sort((a, b) => startOf(a) - startOf(b));
  }

  private rewrite(state: FileLines, hunks: Hunk[], writer: number, fileId: number): number {
    const oldOwners = state.owners;
    const oldLengths = state.lengths;
    const oldTotal = state.total;
    state.restart();
    let run = 0;
    let offset = 0; // lines of oldOwners[run] already consumed
    let pos = 0; // old lines consumed
    const consume = (n: number, keep: boolean): void => {
      while (n > 0 && run < oldOwners.length) {
        const take = Math.min(n, oldLengths[run] - offset);
        const owner = oldOwners[run];
        if (keep) state.keep(owner, take);
        else {
          state.uncount(owner, take);
          this.event(owner, fileId, writer, take);
        }
        n -= take;
        offset += take;
        if (offset === oldLengths[run]) {
          run++;
          offset = 0;
        }
      }
    };
    let written = 0;
    for (const h of hunks) {
      let start = startOf(h);
      if (start < pos) {
        this.warn(`command ${writer}: overlapping hunks in ${this.paths[fileId]}; the overlap was merged.`);
        start = pos;
      }
      if (start > oldTotal) start = oldTotal;
      consume(start - pos, true);
      const removed = Math.min(h.oldLines, oldTotal - start);
      consume(removed, false);
      pos = start + removed;
      state.push(writer, h.newLines);
      written += h.newLines;
    }
    consume(oldTotal - pos, true);
    return written;
  }

  private drop(state: FileLines, fileId: number, time: number): void {
    for (let i = 0; i < state.owners.length; i++) this.event(state.owners[i], fileId, time, state.lengths[i]);
    state.reset();
  }

  private truncate(state: FileLines, keep: number, fileId: number, time: number): void {
    const owners = state.owners;
    const lengths = state.lengths;
    state.restart();
    let left = keep;
    for (let i = 0; i < owners.length; i++) {
      const kept = Math.min(left, lengths[i]);
      state.keep(owners[i], kept);
      if (lengths[i] > kept) {
        state.uncount(owners[i], lengths[i] - kept);
        this.event(owners[i], fileId, time, lengths[i] - kept);
      }
      left -= kept;
    }
  }

  private event(owner: number, fileId: number, time: number, count: number): void {
    if (owner === NO_OWNER || count <= 0) return;
    this.evOwner.push(owner);
    this.evFile.push(fileId);
    this.evTime.push(time);
    this.evCount.push(count);
  }
}

/** 0-based index of the first old line a hunk touches; for a pure insertion, the insertion point. */
function startOf(h: Hunk): number {
  return h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
}

class FileLines {
  owners: number[] = [];
  lengths: number[] = [];
  total = 0;
  /** Lines per owner currently in the file (owners with none are removed), for O(owners) reads. */
  counts = new Map<number, number>();

  reset(): void {
    this.restart();
    this.counts = new Map();
  }

  /** Empties the intervals but keeps the counts: `rewrite` re-adds kept lines and un-counts removed ones. */
  restart(): void {
    this.owners = [];
    this.lengths = [];
    this.total = 0;
  }

  /** Appends new lines of `owner`. */
  push(owner: number, n: number): void {
    if (n <= 0) return;
    this.keep(owner, n);
    if (owner !== NO_OWNER) this.counts.set(owner, (this.counts.get(owner) ?? 0) + n);
  }

  /** Appends lines that were already counted (kept across a rewrite). */
  keep(owner: number, n: number): void {
    if (n <= 0) return;
    const last = this.owners.length - 1;
    if (last >= 0 && this.owners[last] === owner) this.lengths[last] += n;
    else {
      this.owners.push(owner);
      this.lengths.push(n);
    }
    this.total += n;
  }

  uncount(owner: number, n: number): void {
    if (owner === NO_OWNER || n <= 0) return;
    const left = (this.counts.get(owner) ?? 0) - n;
    if (left > 0) this.counts.set(owner, left);
    else this.counts.delete(owner);
  }
}
