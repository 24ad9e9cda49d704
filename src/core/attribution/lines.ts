import type { StepRecord } from '../trajectory/schema';
import { computeDepgpo, normalizePath } from '../depgpo/compute';
import { Provenance, NO_OWNER } from '../depgpo/provenance';
import { depgpoInput, trajectoryCommands, type TrajectoryLike } from '../depgpo/trajectory';
import type { DepgpoCommand } from '../depgpo/types';

export interface LineAttribution {
  /** 1-based line of the file's final content. */
  line: number;
  /** Step (record index, what `tbrl/selectStep` takes) whose command last wrote the line; undefined = original content. */
  step?: number;
  /** The writing command as the agent wrote it (bash command line, or "file.edit /path"). */
  command?: string;
  /** The line is in the file at verification and counts towards E, directly or through a consumer. */
  reachedE: boolean;
  via?: 'direct' | 'indirect';
}

export interface FileAttribution {
  path: string;
  lines: LineAttribution[];
  /** False when the run has no verifier trace: nothing can be said to reach E. */
  eKnown: boolean;
  /** The file itself is in the resource set E. */
  inE: boolean;
  /** The last traced write deleted the file. */
  deleted: boolean;
  warnings: string[];
}

const MAX_COMMAND_CHARS = 200;

/**
 * Who wrote each line of `path` as it stands at the end of the run, and whether it reached E.
 * Ownership replays DepGPO's own Provenance over the same commands (same node numbering), and
 * E comes from computeDepgpo, so the editor never disagrees with the credit the trainer used.
 *
 * Indirect reach for a surviving line follows DepGPO's rule: some later command read the file
 * while the line was there and has lines reaching E in another file. DepGPO reports reach per
 * command, not per file, so "in another file" is read as "the consumer wrote some other file and
 * has reaching lines" — exact unless the consumer also rewrote this same file.
 */
export function lineAttribution(trajectory: TrajectoryLike, path: string): FileAttribution {
  const target = normalizePath(path);
  const input = depgpoInput(trajectory);
  const commands = input.commands;
  const result = computeDepgpo(input);
  const warnings: string[] = [];
  const provenance = new Provenance((m) => warnings.push(m));
  let deleted = false;
  commands.forEach((c, i) => {
    for (const w of writesOf(c)) {
      provenance.apply(i, w);
      if (w.path === target) deleted = !!w.deleted;
    }
  });
  const eKnown = !!input.verifier;
  const inE = result.resources.files.includes(target);
  const indirect = new Map<number, boolean>();
  const reachesIndirectly = (owner: number): boolean => {
    let hit = indirect.get(owner);
    if (hit === undefined) {
      hit = false;
      for (let c = owner + 1; c < commands.length && !hit; c++) {
        const reads = (commands[c].trace?.reads ?? []).map(normalizePath);
        if (!reads.includes(target)) continue;
        const elsewhere = writesOf(commands[c]).some((w) => w.path !== target && !w.deleted && w.hunks.some((h) => h.newLines > 0));
        hit = elsewhere && (result.commandScores[c]?.linesReachingE ?? 0) > 0;
      }
      indirect.set(owner, hit);
    }
    return hit;
  };

  const lines: LineAttribution[] = [];
  for (const { owner, length } of provenance.intervalsOf(target)) {
    const cmd = owner === NO_OWNER ? undefined : commands[owner];
    const via = !eKnown ? undefined : inE ? 'direct' : cmd && reachesIndirectly(owner) ? 'indirect' : undefined;
    for (let k = 0; k < length; k++) {
      lines.push({
        line: lines.length + 1,
        ...(cmd ? { step: cmd.step, command: describe(trajectory.steps, cmd) } : {}),
        reachedE: via !== undefined,
        ...(via ? { via } : {}),
      });
    }
  }
  return { path: target, lines, eKnown, inE, deleted, warnings };
}

/** Every path a traced command wrote, in first-write order, and whether its last write deleted it. */
export function changedFiles(steps: StepRecord[]): Array<{ path: string; deleted: boolean; lastStep: number }> {
  const files = new Map<string, { path: string; deleted: boolean; lastStep: number }>();
  for (const c of trajectoryCommands(steps)) {
    for (const w of writesOf(c)) {
      const entry = files.get(w.path) ?? { path: w.path, deleted: false, lastStep: c.step };
      entry.deleted = !!w.deleted;
      entry.lastStep = c.step;
      files.set(w.path, entry);
    }
  }
  return [...files.values()];
}

function writesOf(c: DepgpoCommand): Array<{ path: string; hunks: import('../trace/types').Hunk[]; created?: boolean; deleted?: boolean; linesAfter: number }> {
  const writes = Array.isArray(c.trace?.writes) ? c.trace.writes : [];
  return writes
    .filter((w) => w && typeof w.path === 'string' && w.path !== '')
    .map((w) => ({ ...w, path: normalizePath(w.path), hunks: Array.isArray(w.hunks) ? w.hunks : [] }));
}

function describe(steps: StepRecord[], c: DepgpoCommand): string {
  const action = steps[c.step]?.actions?.[c.action ?? 0];
  const input = action?.input ?? {};
  const text = action?.kind === 'bash' && typeof input.cmd === 'string' ? input.cmd : `${action?.kind ?? 'command'}${typeof input.path === 'string' ? ` ${input.path}` : ''}`;
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_COMMAND_CHARS ? `${oneLine.slice(0, MAX_COMMAND_CHARS - 1)}…` : oneLine;
}
