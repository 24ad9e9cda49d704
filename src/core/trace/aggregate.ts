import { SHELL_STATE_PREFIX } from '../sandbox/shell-paths';
import type { TraceEvent } from './strace-parser';

/**
 * What the syscalls between two command markers amount to, before file contents are read.
 * Paths are absolute as seen inside the task container.
 */
export interface RawCommandTrace {
  reads: string[];
  /** Paths that may have changed: opened for writing, created, truncated, rename targets, link names. */
  written: string[];
  /** Paths that may be gone: unlinked or renamed away. */
  removed: string[];
  ports: number[];
  /** Ports this command tried to connect to, refused or not: what a verifier "probes". */
  probed: number[];
  /** Processes started in this window and still running at its end, as "pid:comm". */
  outlived: string[];
  /** Pids whose /proc entries were read or that were signalled (kill -0 included). */
  inspectedPids: number[];
  /** Pids started in this window (processes only, not threads). */
  spawned: number[];
  /** Paths whose metadata or existence changed: chmod, chown, utime (touch), rename (both names), unlink. */
  metaWritten: string[];
  /** Paths checked for existence or permissions without being read: access(), failed opens. */
  checked: string[];
}

/**
 * Reads that say nothing about the task: kernel pseudo-filesystems, the dynamic loader's cache,
 * and the runtime under system prefixes (binaries, shared libraries, the Python stdlib, locales…).
 * A system-prefix path still counts when a traced command wrote it earlier in this sandbox
 * (`writtenBefore`), so an agent patching /usr/lib/python3/dist-packages/x.py keeps its edge.
 * /etc is kept: configuration there is often the task itself (nginx.conf, crontabs).
 */
const PSEUDO_PREFIXES = ['/proc/', '/sys/', '/dev/'];
const PSEUDO_EXACT = new Set(['/proc', '/sys', '/dev', '/etc/ld.so.cache', '/etc/ld.so.preload', '/']);
const SYSTEM_PREFIXES = ['/usr/lib/', '/usr/lib64/', '/usr/libexec/', '/usr/share/', '/usr/bin/', '/usr/sbin/', '/usr/local/lib/', '/lib/', '/lib64/', '/lib32/', '/bin/', '/sbin/', '/usr/include/'];
const SHARED_LIB_RE = /\.so(\.\d+)*$/;
/** strace -y's name for an O_TMPFILE file: it has no path, so no later command can read it. */
const ANONYMOUS_TMPFILE_RE = /\/#\d+$/;

export function isNoiseRead(path: string, writtenBefore: ReadonlySet<string>): boolean {
  if (PSEUDO_EXACT.has(path) || PSEUDO_PREFIXES.some((p) => path.startsWith(p))) return true;
  if (isStudioPath(path) || ANONYMOUS_TMPFILE_RE.test(path)) return true;
  if (writtenBefore.has(path)) return false;
  if (SHARED_LIB_RE.test(path)) return true;
  return SYSTEM_PREFIXES.some((p) => path.startsWith(p));
}

/** Writes to these are not task state: terminals, pipes, pseudo-files. */
export function isNoiseWrite(path: string): boolean {
  return PSEUDO_EXACT.has(path) || PSEUDO_PREFIXES.some((p) => path.startsWith(p)) || isStudioPath(path) || ANONYMOUS_TMPFILE_RE.test(path);
}

/** The studio's own files in the container: the tracer bundle and markers, the shell's saved state. */
function isStudioPath(path: string): boolean {
  return path.startsWith('/.tbrl-') || path.startsWith(SHELL_STATE_PREFIX);
}

export interface AggregateContext {
  /** Paths written by earlier traced commands. */
  writtenBefore: ReadonlySet<string>;
  /** The persistent shell: never an "outliving process" of a command. */
  shellPid: number;
  /** Pid → comm as the parser last knew it (for "pid:comm"). */
  commOf: (pid: number) => string | undefined;
}

/** Folds a window's events into a RawCommandTrace; processes without an exit event in the window outlived it. */
export function aggregate(events: readonly TraceEvent[], ctx: AggregateContext): RawCommandTrace {
  const reads = new Set<string>();
  const written = new Set<string>();
  const removed = new Set<string>();
  const ports = new Set<number>();
  const probed = new Set<number>();
  const inspected = new Set<number>();
  const spawned: number[] = [];
  const spawnedSet = new Set<number>();
  const exited = new Set<number>();
  const createdHere = new Set<string>();
  const metaWritten = new Set<string>();
  const checked = new Set<string>();
  for (const ev of events) {
    switch (ev.kind) {
      case 'open': {
        if (!ev.ok) {
          noteProcRead(ev.path, inspected);
          // A failed open is a look for the file ("is it still there?"), as for a verifier checking a deletion.
          if (!ev.create && !isNoiseRead(ev.path, ctx.writtenBefore)) checked.add(ev.path);
          continue;
        }
        noteProcRead(ev.path, inspected);
        if (ev.directory) continue;
        if (ev.write || ev.create || ev.truncate) {
          if (!isNoiseWrite(ev.path)) written.add(ev.path);
        }
        // O_CREAT|O_EXCL succeeded: the file is new, so opening it O_RDWR reads nothing from before.
        if (ev.exclusive) createdHere.add(ev.path);
        if (ev.read && !isNoiseRead(ev.path, ctx.writtenBefore)) reads.add(ev.path);
        break;
      }
      case 'exec':
        // A command's own executables are its tools, not its inputs, unless they live outside the
        // system prefixes (./a.out built by an earlier command is an input).
        if (ev.ok && !isNoiseRead(ev.path, ctx.writtenBefore)) reads.add(ev.path);
        break;
      case 'spawn':
        if (!ev.thread && !spawnedSet.has(ev.child)) {
          spawned.push(ev.child);
          spawnedSet.add(ev.child);
        }
        break;
      case 'exit':
        exited.add(ev.pid);
        break;
      case 'socket':
        // Name resolution (port 53) is the resolver's business, not a dependency between commands.
        if (ev.port === 0 || ev.port === 53) continue;
        if (ev.op === 'connect') probed.add(ev.port);
        if (ev.ok) ports.add(ev.port);
        break;
      case 'rename':
        if (!ev.ok) continue;
        if (!isNoiseWrite(ev.from)) {
          removed.add(ev.from);
          metaWritten.add(ev.from);
        }
        if (!isNoiseWrite(ev.to)) {
          written.add(ev.to);
          metaWritten.add(ev.to);
        }
        break;
      case 'unlink':
        if (ev.ok && !isNoiseWrite(ev.path)) {
          removed.add(ev.path);
          metaWritten.add(ev.path);
        }
        break;
      case 'meta':
        if (ev.ok && !isNoiseWrite(ev.path)) metaWritten.add(ev.path);
        break;
      case 'access':
        if (!isNoiseRead(ev.path, ctx.writtenBefore)) checked.add(ev.path);
        break;
      case 'truncate':
      case 'link':
        if (ev.ok && !isNoiseWrite(ev.path)) written.add(ev.path);
        break;
      case 'kill':
        if (ev.target > 0) inspected.add(ev.target);
        break;
      case 'mark':
        break;
    }
  }
  for (const p of createdHere) reads.delete(p);
  // A path renamed away and later recreated (sed -i's temp files, editors' save) ends up written.
  for (const p of written) removed.delete(p);
  const outlived = spawned
    .filter((pid) => !exited.has(pid) && pid !== ctx.shellPid)
    .map((pid) => `${pid}:${ctx.commOf(pid) ?? '?'}`);
  // Inspecting your own children is bookkeeping, not a check of the environment.
  for (const pid of [...inspected]) if (spawnedSet.has(pid) || pid === ctx.shellPid) inspected.delete(pid);
  return {
    reads: [...reads],
    written: [...written],
    removed: [...removed].filter((p) => !written.has(p)),
    ports: [...ports],
    probed: [...probed],
    outlived,
    inspectedPids: [...inspected],
    spawned,
    metaWritten: [...metaWritten],
    checked: [...checked].filter((p) => !reads.has(p)),
  };
}

function noteProcRead(path: string, inspected: Set<number>): void {
  const m = /^\/proc\/(\d+)(\/|$)/.exec(path);
  // Pid 1 is the container's init, which no command started: runtimes read it for cgroup limits.
  if (m && m[1] !== '1') inspected.add(Number(m[1]));
}
