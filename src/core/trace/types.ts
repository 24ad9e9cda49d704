/**
 * What one command did, as DepGPO needs it. Reads are file level; writes are line level, stated
 * as diff hunks from the file's content before the command to its content after it, so that
 * line provenance can be carried through later edits (a line written by c1 is "still there"
 * when c2 reads the file only if no later hunk replaced it).
 */
export interface Hunk {
  /** 1-based first line in the old content (for a pure insertion: the line after which it goes, 0 = top). */
  oldStart: number;
  oldLines: number;
  /** 1-based first line in the new content. */
  newStart: number;
  newLines: number;
}

export interface FileWrite {
  path: string;
  /** Changed lines; empty when the content ended up identical (an overwrite with the same bytes writes nothing). */
  hunks: Hunk[];
  created?: boolean;
  deleted?: boolean;
  /** Line count after the command. */
  linesAfter: number;
}

export interface CommandTrace {
  /** Absolute paths opened for reading (not counting the command's own binaries and libraries). */
  reads: string[];
  writes: FileWrite[];
  /** Values printed by the command that a later command may reuse: paths, ports, ids, urls. */
  stdoutValues: string[];
  /** TCP/UDP ports bound or connected to. */
  ports: number[];
  /** Processes started by the command that outlived it ("pid:comm"). */
  processes: string[];
  /** Set when the trace for this command is partial or missing and why. */
  incomplete?: string;
  /** Ports the command tried to connect to, refused or not (what a verifier "probes"). */
  probedPorts?: number[];
  /** Processes it inspected that it did not start: /proc/<pid> reads, signals incl. kill -0 ("pid:comm"). */
  inspectedProcesses?: string[];
  /** Files whose metadata or existence the command changed: chmod, chown, touch (utime), rename (both names), unlink. */
  metaWrites?: string[];
  /** Files it checked for existence or permissions without reading them (access, a failed open). */
  checkedPaths?: string[];
}

/** What the verifier (the test run) inspected: DepGPO's resource set E, before removing files it wrote itself. */
export interface VerifierTrace {
  reads: string[];
  writes: string[];
  ports: number[];
  processes: string[];
  /** Files it checked for existence or permissions without opening them for reading (access, a failed open). */
  checked?: string[];
}

export const EMPTY_TRACE: CommandTrace = Object.freeze({ reads: [], writes: [], stdoutValues: [], ports: [], processes: [] }) as CommandTrace;
