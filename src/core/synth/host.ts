import { spawn } from 'node:child_process';
import { accessSync, chmodSync, closeSync, constants, copyFileSync, existsSync, fchmodSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FileMap } from './types';

/** Running the rendered programs on the host (python3 + bash) against a scratch workspace. */
export interface Proc { code: number | null; stdout: string; stderr: string }

/** `discardOutput`: stdout and stderr on /dev/null (the result's are empty). */
export function runProcess(argv: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; discardOutput?: boolean } = {}): Promise<Proc> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: options.discardOutput ? 'ignore' : ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // Decoded as a stream: a character split across two reads stays one character.
    child.stdout?.setEncoding('utf8');
    child.stderr?.setEncoding('utf8');
    child.stdout?.on('data', (d: string) => { stdout += d; });
    child.stderr?.on('data', (d: string) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (err) => { clearTimeout(timer); resolvePromise({ code: null, stdout, stderr: stderr + String(err) }); });
    child.on('close', (code) => { clearTimeout(timer); resolvePromise({ code, stdout, stderr }); });
  });
}

export async function writeFiles(root: string, files: FileMap): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text);
  }
}

/** `base`: where to make it (default os.tmpdir()). */
export async function scratchDir(prefix: string, base = tmpdir()): Promise<{ dir: string; dispose: () => Promise<void> }> {
  const dir = await mkdtemp(join(base, prefix));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

/** A scratch directory removed with removeTree (the gates' fast path). */
export async function fastScratchDir(prefix: string, base = tmpdir()): Promise<{ dir: string; dispose: () => Promise<void> }> {
  const dir = mkdtempSync(join(base, prefix));
  return { dir, dispose: () => removeTree(dir) };
}

let memoryBase: string | null | undefined;

/**
 * A private directory on a memory file system for the host gates' scratch workspaces and their
 * programs' TMPDIR, or undefined where there is none (then os.tmpdir()). Issue #20: a task's gates
 * create and delete ~3,000 files (probe workspaces, each grader's two private copies of the data,
 * the verifier's, every pipeline's outputs), and on ext4 creating an inode after many deletions
 * scans the inode bitmap (`recently_deleted`) and deleting one truncates and journals: a tenth of the
 * gates' CPU. /dev/shm counts only if it is a tmpfs mounted without noexec (the log-forensics route
 * table is a binary the gates run) and writable. The directory is removed when the process exits.
 */
export function memoryScratchBase(): string | undefined {
  if (memoryBase !== undefined) return memoryBase ?? undefined;
  memoryBase = null;
  try {
    const mount = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')).filter((f) => f[1] === '/dev/shm').pop();
    if (!mount || mount[2] !== 'tmpfs' || mount[3].split(',').includes('noexec')) return undefined;
    accessSync('/dev/shm', constants.W_OK | constants.X_OK);
    const dir = mkdtempSync('/dev/shm/tbrl-gates-');
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    memoryBase = dir;
  } catch {
    memoryBase = null;
  }
  return memoryBase ?? undefined;
}

/**
 * Copies a directory tree as `fs.cp(src, dst, { recursive: true, verbatimSymlinks: true })` does
 * (files and directories keep their mode, symlinks are copied as they are, timestamps are not kept),
 * with one synchronous call per entry: fs.cp's promise-per-step walk (an lstat of source and target
 * per entry, a chmod per file) was most of the gates' own CPU in Node (issue #20). A tree with
 * anything else (a FIFO, a socket, a device), or a target that already exists (fs.cp merges), is
 * left to fs.cp.
 */
export async function copyTree(src: string, dst: string): Promise<void> {
  type Entry = { rel: string; kind: 'dir' | 'file' | 'link'; mode: number };
  const entries: Entry[] = [];
  const walk = (rel: string): boolean => {
    for (const e of readdirSync(join(src, rel), { withFileTypes: true })) {
      const sub = rel ? join(rel, e.name) : e.name;
      if (e.isDirectory()) {
        entries.push({ rel: sub, kind: 'dir', mode: lstatSync(join(src, sub)).mode });
        if (!walk(sub)) return false;
      } else if (e.isFile()) entries.push({ rel: sub, kind: 'file', mode: 0 });
      else if (e.isSymbolicLink()) entries.push({ rel: sub, kind: 'link', mode: 0 });
      else return false;
    }
    return true;
  };
  const rootMode = lstatSync(src).mode;
  if (existsSync(dst) || !walk('')) {
    await cp(src, dst, { recursive: true, verbatimSymlinks: true });
    return;
  }
  mkdirSync(dst, { recursive: true });
  for (const e of entries) {
    if (e.kind === 'dir') mkdirSync(join(dst, e.rel));
    // copyFile gives the target the source's mode (libuv fchmods it).
    else if (e.kind === 'file') copyFileSync(join(src, e.rel), join(dst, e.rel));
    else symlinkSync(readlinkSync(join(src, e.rel)), join(dst, e.rel));
  }
  // Directory modes last, deepest first (fs.cp sets each after copying into it).
  for (const e of entries.filter((x) => x.kind === 'dir').reverse()) chmodSync(join(dst, e.rel), e.mode & 0o7777);
  chmodSync(dst, rootMode & 0o7777);
}

/** A directory tree held in memory (treeImage): every entry with its mode, a file's bytes, a link's target. */
export interface TreeImage { source: string; rootMode: number; entries: { rel: string; kind: 'dir' | 'file' | 'link'; mode: number; data?: Buffer; target?: string }[] }

/**
 * Reads a tree once so that copies of it can be written without reading it again (issue #20: the
 * gates copy the untouched workspace ~16 times a task and the finished reference ~15 times, each
 * copyTree a readdir walk plus open/fstat/open/fchmod/sendfile/close per file). Only for a tree
 * that nothing changes while its copies are made; undefined for anything copyTree leaves to fs.cp
 * (a FIFO, a socket, a device).
 */
export function treeImage(src: string): TreeImage | undefined {
  const entries: TreeImage['entries'] = [];
  const walk = (rel: string): boolean => {
    for (const e of readdirSync(join(src, rel), { withFileTypes: true })) {
      const sub = rel ? join(rel, e.name) : e.name;
      const path = join(src, sub);
      if (e.isDirectory()) {
        entries.push({ rel: sub, kind: 'dir', mode: lstatSync(path).mode });
        if (!walk(sub)) return false;
      } else if (e.isFile()) entries.push({ rel: sub, kind: 'file', mode: lstatSync(path).mode, data: readFileSync(path) });
      else if (e.isSymbolicLink()) entries.push({ rel: sub, kind: 'link', mode: 0, target: readlinkSync(path) });
      else return false;
    }
    return true;
  };
  try {
    const rootMode = lstatSync(src).mode;
    return walk('') ? { source: src, rootMode, entries } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes the tree copyTree(image.source, dst) would have written when the image was read: the same
 * entries, bytes and modes (each file's set with fchmod, whatever the umask, as copyFile does),
 * symlinks verbatim, directory modes last and deepest first. A target that exists goes to copyTree
 * (fs.cp merges).
 */
export async function writeTreeImage(image: TreeImage, dst: string): Promise<void> {
  if (existsSync(dst)) return copyTree(image.source, dst);
  mkdirSync(dst, { recursive: true });
  for (const e of image.entries) {
    const path = join(dst, e.rel);
    if (e.kind === 'dir') mkdirSync(path);
    else if (e.kind === 'file') {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeFileSync(fd, e.data!);
        fchmodSync(fd, e.mode & 0o7777);
      } finally {
        closeSync(fd);
      }
    } else symlinkSync(e.target!, path);
  }
  for (const e of image.entries.filter((x) => x.kind === 'dir').reverse()) chmodSync(join(dst, e.rel), e.mode & 0o7777);
  chmodSync(dst, image.rootMode & 0o7777);
}

/**
 * Removes a directory tree as `fs.rm(path, { recursive: true, force: true })` does, with one
 * synchronous call per entry (fs.rm's promise-per-step walk cost the gates' Node process more than
 * the removals). Anything it cannot remove this way (a permission problem, a race) is left to fs.rm.
 */
export async function removeTree(path: string): Promise<void> {
  const remove = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) remove(p);
      else unlinkSync(p);
    }
    rmdirSync(dir);
  };
  try {
    if (!lstatSync(path, { throwIfNoEntry: false })?.isDirectory()) return await rm(path, { recursive: true, force: true });
    remove(path);
  } catch {
    await rm(path, { recursive: true, force: true });
  }
}
