import * as posixPath from 'node:path/posix';
import { TRACE_MARK_PREFIX } from '../sandbox/shell-paths';

/**
 * Parses the output of `strace -f -tt [-y] -o FILE -e trace=...` into events. Stateful: it joins
 * `<unfinished ...>` / `<... resumed>` halves per pid and tracks each process's cwd (seeded by the
 * caller, inherited across fork, updated by chdir/fchdir) so relative paths become absolute even
 * when strace could not decorate them with -y (failed calls, rename/unlink which take no fd).
 */

export type TraceEvent =
  | { kind: 'open'; pid: number; path: string; read: boolean; write: boolean; create: boolean; exclusive: boolean; truncate: boolean; directory: boolean; ok: boolean }
  | { kind: 'exec'; pid: number; path: string; ok: boolean }
  | { kind: 'spawn'; pid: number; child: number; thread: boolean }
  | { kind: 'exit'; pid: number }
  | { kind: 'socket'; pid: number; op: 'bind' | 'connect'; port: number; ok: boolean }
  | { kind: 'rename'; pid: number; from: string; to: string; ok: boolean }
  | { kind: 'unlink'; pid: number; path: string; ok: boolean }
  | { kind: 'truncate'; pid: number; path: string; ok: boolean }
  | { kind: 'link'; pid: number; path: string; ok: boolean }
  | { kind: 'kill'; pid: number; target: number; signal: string; ok: boolean }
  /** chmod, chown, utimensat (touch) and their fd/at variants: the file's metadata changed. */
  | { kind: 'meta'; pid: number; path: string; op: 'chmod' | 'chown' | 'utime'; ok: boolean }
  /** access/faccessat: an existence or permission check (`test -x`, os.access). */
  | { kind: 'access'; pid: number; path: string; ok: boolean }
  | { kind: 'mark'; pid: number; n: number; phase: MarkPhase };

/** Syscalls the tracer asks strace for: everything the parser understands, nothing more (each one costs a stop). */
export const TRACED_SYSCALLS = [
  'open', 'openat', 'openat2', 'creat', 'execve', 'execveat', 'chdir', 'fchdir',
  'clone', 'clone3', 'fork', 'vfork', 'bind', 'connect',
  'rename', 'renameat', 'renameat2', 'unlink', 'unlinkat', 'truncate',
  'link', 'linkat', 'symlink', 'symlinkat', 'kill',
  // Metadata writes and existence checks (DepGPO credits a chmod the verifier checks). Rare calls,
  // unlike the stat family, which every runtime makes by the thousand and is left out for cost.
  'chmod', 'fchmod', 'fchmodat', 'chown', 'fchown', 'lchown', 'fchownat', 'utimensat', 'utimes', 'utime', 'futimesat',
  'access', 'faccessat', 'faccessat2',
];

/** Paths opened by the frame shell to mark command boundaries; they never exist. */
export const MARK_PREFIX = TRACE_MARK_PREFIX;
/**
 * `begin`/`end`: opened by the frame shell around a traced command; `go`: opened by the command's
 * own process as the first thing it does (before any state or agent code), so its start-up (bash
 * reading /etc/passwd, its loader) stays out of the command's trace.
 */
export type MarkPhase = 'begin' | 'end' | 'go';
export function markPath(n: number, phase: MarkPhase): string {
  return `${MARK_PREFIX}${n}-${phase}`;
}
const MARK_RE = /^\/\.tbrl-mark-(\d+)-(begin|end|go)$/;

interface ProcState {
  /** Shared with threads (CLONE_FS), copied for processes. */
  fs: { cwd: string };
  comm: string;
}

const LINE_RE = /^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(?:\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)?(.*)$/;
const RESUMED_RE = /^<\.\.\. (\w+) resumed>\s?(.*)$/;
const CALL_RE = /^(\w+)\((.*)\)\s+=\s+(.*)$/;
const UNFINISHED = ' <unfinished ...>';

export class StraceParser {
  private readonly procs = new Map<number, ProcState>();
  private readonly pending = new Map<number, string>();

  constructor(private rootPid = 0, rootCwd = '/') {
    if (rootPid) this.procs.set(rootPid, { fs: { cwd: rootCwd }, comm: 'bash' });
  }

  /** The shell's cwd at a command boundary as the shell itself reports it (authoritative). */
  setCwd(pid: number, cwd: string): void {
    this.proc(pid).fs.cwd = cwd;
  }

  cwdOf(pid: number): string {
    return this.proc(pid).fs.cwd;
  }

  commOf(pid: number): string | undefined {
    return this.procs.get(pid)?.comm;
  }

  knows(pid: number): boolean {
    return this.procs.has(pid);
  }

  /** Parses one line; returns the events it completes (none for signals, unfinished halves, noise). */
  push(rawLine: string): TraceEvent[] {
    const m = LINE_RE.exec(rawLine);
    if (!m) return [];
    const pid = Number(m[1] ?? m[2] ?? this.rootPid);
    let body = m[3];
    if (body.startsWith('+++ ')) {
      if (/^\+\+\+ (exited|killed)/.test(body)) {
        this.pending.delete(pid);
        return [{ kind: 'exit', pid }];
      }
      return [];
    }
    if (body.startsWith('--- ')) return [];
    if (body.endsWith(UNFINISHED)) {
      this.pending.set(pid, body.slice(0, -UNFINISHED.length));
      return [];
    }
    const resumed = RESUMED_RE.exec(body);
    if (resumed) {
      const head = this.pending.get(pid);
      this.pending.delete(pid);
      if (head === undefined) return [];
      // "openat(AT_FDCWD, "x", O_RDONLY" + ", 0666) = 3" — the halves split at an argument boundary.
      body = head + resumed[2];
    }
    const call = CALL_RE.exec(body);
    if (!call) return [];
    return this.interpret(pid, call[1], splitArgs(call[2]), call[3]);
  }

  private proc(pid: number): ProcState {
    let p = this.procs.get(pid);
    if (!p) {
      // A process we never saw start (attached mid-flight): assume the root's cwd until told otherwise.
      const root = this.procs.get(this.rootPid);
      p = { fs: { cwd: root?.fs.cwd ?? '/' }, comm: '?' };
      this.procs.set(pid, p);
    }
    return p;
  }

  private interpret(pid: number, name: string, args: string[], ret: string): TraceEvent[] {
    const r = parseReturn(ret);
    const ok = r.ok;
    const st = this.proc(pid);
    switch (name) {
      case 'open':
      case 'creat':
      case 'openat':
      case 'openat2': {
        const withDir = name === 'openat' || name === 'openat2';
        const pathArg = withDir ? args[1] : args[0];
        const raw = decodeCString(pathArg);
        if (raw === undefined) return [];
        if (MARK_RE.test(raw)) {
          const mm = MARK_RE.exec(raw)!;
          return [{ kind: 'mark', pid, n: Number(mm[1]), phase: mm[2] as MarkPhase }];
        }
        const path = r.fdPath ?? this.resolve(pid, withDir ? args[0] : undefined, raw);
        const flags = name === 'creat' ? 'O_WRONLY|O_CREAT|O_TRUNC' : name === 'openat2' ? (args[2] ?? '') : (withDir ? args[2] : args[1]) ?? '';
        const write = /O_WRONLY|O_RDWR/.test(flags);
        const read = !/O_WRONLY/.test(flags);
        return [{
          kind: 'open', pid, path: stripDeleted(path), read, write,
          create: /O_CREAT/.test(flags), exclusive: /O_CREAT/.test(flags) && /O_EXCL/.test(flags), truncate: /O_TRUNC/.test(flags), directory: /O_DIRECTORY/.test(flags) || /O_PATH/.test(flags), ok,
        }];
      }
      case 'execve':
      case 'execveat': {
        const withDir = name === 'execveat';
        const raw = decodeCString(withDir ? args[1] : args[0]);
        if (raw === undefined) return [];
        const path = this.resolve(pid, withDir ? args[0] : undefined, raw);
        if (ok) st.comm = posixPath.basename(path).slice(0, 15);
        return [{ kind: 'exec', pid, path, ok }];
      }
      case 'chdir': {
        const raw = decodeCString(args[0]);
        if (ok && raw !== undefined) st.fs.cwd = this.resolve(pid, undefined, raw);
        return [];
      }
      case 'fchdir': {
        const dir = fdDecoration(args[0]);
        if (ok && dir) st.fs.cwd = dir;
        return [];
      }
      case 'clone':
      case 'clone3':
      case 'fork':
      case 'vfork': {
        if (!ok || r.value <= 0) return [];
        const flags = args.join(',');
        const thread = /CLONE_THREAD/.test(flags);
        const child = r.value;
        const parentState = this.proc(pid);
        // A thread shares its process's cwd; a process starts with a copy of its parent's.
        const fs = thread || /CLONE_FS/.test(flags) ? parentState.fs : { cwd: parentState.fs.cwd };
        const existing = this.procs.get(child);
        if (existing && existing.comm !== '?') {
          // strace may print the child's first syscalls before the parent's clone returns.
          existing.fs = fs;
        } else {
          this.procs.set(child, { fs, comm: parentState.comm });
        }
        return [{ kind: 'spawn', pid, child, thread }];
      }
      case 'bind':
      case 'connect': {
        const port = /sin6?_port=htons\((\d+)\)/.exec(args.slice(1).join(','));
        if (!port) return [];
        return [{ kind: 'socket', pid, op: name, port: Number(port[1]), ok: ok || /EINPROGRESS/.test(ret) }];
      }
      case 'rename':
      case 'renameat':
      case 'renameat2': {
        const at = name !== 'rename';
        const fromRaw = decodeCString(at ? args[1] : args[0]);
        const toRaw = decodeCString(at ? args[3] : args[1]);
        if (fromRaw === undefined || toRaw === undefined) return [];
        return [{
          kind: 'rename', pid, ok,
          from: this.resolve(pid, at ? args[0] : undefined, fromRaw),
          to: this.resolve(pid, at ? args[2] : undefined, toRaw),
        }];
      }
      case 'unlink':
      case 'unlinkat': {
        const at = name === 'unlinkat';
        if (at && /AT_REMOVEDIR/.test(args[2] ?? '')) return [];
        const raw = decodeCString(at ? args[1] : args[0]);
        if (raw === undefined) return [];
        return [{ kind: 'unlink', pid, ok, path: this.resolve(pid, at ? args[0] : undefined, raw) }];
      }
      case 'truncate': {
        const raw = decodeCString(args[0]);
        if (raw === undefined) return [];
        return [{ kind: 'truncate', pid, ok, path: this.resolve(pid, undefined, raw) }];
      }
      case 'link':
      case 'symlink':
      case 'linkat':
      case 'symlinkat': {
        // The new name is the last path argument: link(old, new), linkat(od, old, nd, new, f), symlinkat(target, nd, new).
        const idx = name === 'link' || name === 'symlink' ? 1 : name === 'linkat' ? 3 : 2;
        const dirIdx = name === 'linkat' ? 2 : name === 'symlinkat' ? 1 : undefined;
        const raw = decodeCString(args[idx]);
        if (raw === undefined) return [];
        return [{ kind: 'link', pid, ok, path: this.resolve(pid, dirIdx === undefined ? undefined : args[dirIdx], raw) }];
      }
      case 'chmod':
      case 'chown':
      case 'lchown':
      case 'utimes':
      case 'utime':
      case 'fchmodat':
      case 'fchownat':
      case 'futimesat':
      case 'utimensat':
      case 'fchmod':
      case 'fchown': {
        const op = name.includes('chmod') ? 'chmod' : name.includes('chown') ? 'chown' : 'utime';
        const path = this.pathArg(pid, name, args);
        return path === undefined ? [] : [{ kind: 'meta', pid, path, op, ok }];
      }
      case 'access':
      case 'faccessat':
      case 'faccessat2': {
        const path = this.pathArg(pid, name, args);
        return path === undefined ? [] : [{ kind: 'access', pid, path, ok }];
      }
      case 'kill': {
        const target = Number(args[0]);
        if (!Number.isFinite(target)) return [];
        return [{ kind: 'kill', pid, target, signal: (args[1] ?? '').trim(), ok }];
      }
      default:
        return [];
    }
  }

  /**
   * The file a metadata call names: `name(path, …)`, `name(dirfd, path, …)` for the *at variants,
   * `name(fd, …)` for fchmod/fchown, and utimensat(fd, NULL, …), which is how touch updates an open file.
   */
  private pathArg(pid: number, name: string, args: string[]): string | undefined {
    if (name === 'fchmod' || name === 'fchown') return fdDecoration(args[0] ?? '');
    const at = name.endsWith('at') || name === 'faccessat2';
    if (!at) {
      const raw = decodeCString(args[0]);
      return raw === undefined ? undefined : this.resolve(pid, undefined, raw);
    }
    const raw = decodeCString(args[1]);
    if (raw === undefined) return (args[1] ?? '').trim() === 'NULL' ? fdDecoration(args[0] ?? '') : undefined;
    return this.resolve(pid, args[0], raw);
  }

  /** Absolute path of `raw` as seen by `pid`, relative to a dirfd argument (decorated by -y) or the cwd. */
  private resolve(pid: number, dirArg: string | undefined, raw: string): string {
    if (raw.startsWith('/')) return posixPath.normalize(raw);
    let base: string | undefined;
    if (dirArg !== undefined && !/^AT_FDCWD\b/.test(dirArg.trim())) base = fdDecoration(dirArg);
    base ??= (dirArg && /^AT_FDCWD</.test(dirArg.trim()) ? fdDecoration(dirArg) : undefined) ?? this.proc(pid).fs.cwd;
    return posixPath.normalize(posixPath.join(base, raw));
  }
}

/** "-1 ENOENT (...)", "3</abs/path>", "0", "?" */
function parseReturn(ret: string): { ok: boolean; value: number; fdPath?: string } {
  const m = /^(-?\d+|0x[0-9a-f]+|\?)(<(.*)>)?/.exec(ret.trim());
  if (!m || m[1] === '?') return { ok: false, value: -1 };
  const value = Number(m[1]);
  const fdPath = m[3] !== undefined ? decodeDecoration(m[3]) : undefined;
  return { ok: value >= 0, value, fdPath: fdPath && fdPath.startsWith('/') ? fdPath : undefined };
}

/** `3</some/dir>` or `AT_FDCWD</cwd>` → the decorated absolute path. */
function fdDecoration(arg: string): string | undefined {
  const m = /^[^<]*<(.*)>$/.exec(arg.trim());
  if (!m) return undefined;
  const p = decodeDecoration(m[1]);
  return p.startsWith('/') ? stripDeleted(p) : undefined;
}

function stripDeleted(p: string): string {
  return p.endsWith(' (deleted)') ? p.slice(0, -' (deleted)'.length) : p;
}

/** -y decorations escape like C strings without the surrounding quotes. */
function decodeDecoration(s: string): string {
  return unescapeC(s);
}

/** A quoted strace string argument, or undefined when the argument is not one (e.g. NULL, an address). */
export function decodeCString(arg: string | undefined): string | undefined {
  if (arg === undefined) return undefined;
  const t = arg.trim();
  const m = /^"((?:[^"\\]|\\.)*)"(\.\.\.)?$/.exec(t);
  if (!m) return undefined;
  return unescapeC(m[1]);
}

function unescapeC(s: string): string {
  if (!s.includes('\\')) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '\\') {
      for (const b of Buffer.from(c, 'utf8')) bytes.push(b);
      continue;
    }
    const n = s[++i];
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, v: 11, f: 12, a: 7, b: 8, '\\': 92, '"': 34, "'": 39 };
    if (n in simple) bytes.push(simple[n]);
    else if (n === 'x') {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (/[0-7]/.test(n)) {
      let j = i;
      while (j < i + 3 && /[0-7]/.test(s[j] ?? '')) j++;
      bytes.push(parseInt(s.slice(i, j), 8));
      i = j - 1;
    } else bytes.push(...Buffer.from(n ?? '', 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Splits a syscall's argument list at top-level commas (not inside quotes, braces, brackets or parens). */
export function splitArgs(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inStr = false;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') inStr = true;
    else if (c === '{' || c === '[' || c === '(' || c === '<') depth++;
    else if (c === '}' || c === ']' || c === ')' || c === '>') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = s.slice(start).trim();
  if (last || out.length) out.push(last);
  return out;
}
