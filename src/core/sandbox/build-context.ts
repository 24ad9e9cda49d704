import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { basename, join, relative, sep } from 'node:path';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TbrlError } from '../errors';
import picomatch from 'picomatch';
import * as tar from 'tar-stream';

export interface ContextFile {
  /** Path relative to the context root, `/`-separated. */
  path: string;
  mode: number;
  kind: 'file' | 'directory' | 'symlink';
  /** Bytes of a file. */
  size?: number;
  /** Absolute path a file's bytes are read from (streamed; never all held at once). */
  source?: string;
  /** A file's bytes: given for generated files, read on first use from `source` otherwise. */
  content?: Buffer;
  linkname?: string;
}

/**
 * Largest single file a build context or workspace copy carries: the tar header's size field
 * (11 octal digits) ends at 8 GiB.
 */
export const MAX_CONTEXT_FILE_BYTES = 8 * 1024 ** 3 - 1;

export class ContextFileTooLargeError extends TbrlError {
  constructor(readonly file: string, readonly size: number, limit: number) {
    super(
      'BUILD_CONTEXT_FILE_TOO_LARGE',
      `${file} is ${(size / 1024 ** 3).toFixed(1)} GiB, over the ${(limit / 1024 ** 3).toFixed(1)} GiB a build context file may be.`,
      `Leave it out of the build context with a .dockerignore line (e.g. "${basename(file)}"), or fetch it inside the Dockerfile instead.`,
    );
  }
}

function fileEntry(path: string, source: string, mode: number, size: number): ContextFile {
  let cached: Buffer | undefined;
  return {
    path,
    mode,
    kind: 'file',
    size,
    source,
    // Only callers that need the bytes (workspace diffs) read them, one file at a time.
    get content(): Buffer {
      cached ??= readFileSync(source);
      return cached;
    },
  };
}

/** `.dockerignore` semantics that matter in practice: globs, `**`, `!` re-includes, directory prefixes. */
function ignoreMatcher(root: string): (path: string) => boolean {
  const file = join(root, '.dockerignore');
  if (!existsSync(file)) return () => false;
  const rules = readFileSync(file, 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = (negate ? l.slice(1) : l).replace(/^\/+/, '').replace(/\/+$/, '');
      return { negate, match: picomatch(pattern, { dot: true }) };
    });
  return (path) => {
    const parts = path.split('/');
    let ignored = false;
    for (const rule of rules) {
      for (let i = 1; i <= parts.length; i++) {
        if (rule.match(parts.slice(0, i).join('/'))) {
          ignored = !rule.negate;
          break;
        }
      }
    }
    return ignored;
  };
}

export function collectContext(root: string, options: { ignore?: (path: string) => boolean; maxFileBytes?: number } = {}): ContextFile[] {
  const maxFileBytes = options.maxFileBytes ?? MAX_CONTEXT_FILE_BYTES;
  const ignored = options.ignore ?? ignoreMatcher(root);
  const out: ContextFile[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const rel = relative(root, abs).split(sep).join('/');
      if (ignored(rel)) continue;
      const st = lstatSync(abs);
      if (st.isSymbolicLink()) out.push({ path: rel, mode: st.mode & 0o7777, kind: 'symlink', linkname: readlinkSync(abs) });
      else if (st.isDirectory()) {
        out.push({ path: rel, mode: st.mode & 0o7777, kind: 'directory' });
        walk(abs);
      } else if (st.isFile()) {
        if (st.size > maxFileBytes) throw new ContextFileTooLargeError(abs, st.size, maxFileBytes);
        out.push(fileEntry(rel, abs, st.mode & 0o7777, st.size));
      }
    }
  };
  walk(root);
  return out;
}

/** Content hash of a build: same files, modes, Dockerfile text and args → same image tag. Streams each file. */
export async function contextHash(files: ContextFile[], extra: string): Promise<string> {
  const h = createHash('sha256');
  h.update(extra);
  for (const f of files) {
    h.update(`\0${f.kind}\0${f.path}\0${f.mode.toString(8)}\0${f.linkname ?? ''}\0`);
    if (f.kind !== 'file') continue;
    const inner = createHash('sha256');
    if (f.source !== undefined && !Object.getOwnPropertyDescriptor(f, 'content')?.value) {
      for await (const chunk of createReadStream(f.source)) inner.update(chunk as Buffer);
    } else inner.update(f.content!);
    h.update(inner.digest());
  }
  return h.digest('hex');
}

/**
 * A tar stream of `files`: one file open at a time, read in chunks as the consumer (the Docker
 * daemon) drains it, so a context of any size costs a few buffers of memory. Links are stored as
 * links, never followed.
 */
export function packContext(files: ContextFile[], prefix = ''): Readable {
  const pack = tar.pack();
  void (async () => {
    for (const f of files) {
      const name = prefix + f.path;
      if (f.kind === 'directory') pack.entry({ name, type: 'directory', mode: f.mode });
      else if (f.kind === 'symlink') pack.entry({ name, type: 'symlink', linkname: f.linkname, mode: f.mode });
      else if (f.source !== undefined && !Object.getOwnPropertyDescriptor(f, 'content')?.value) {
        const entry = pack.entry({ name, mode: f.mode, size: f.size });
        await pipeline(createReadStream(f.source), entry);
      } else pack.entry({ name, mode: f.mode, size: f.content!.length }, f.content!);
    }
    pack.finalize();
  })().catch((err: unknown) => pack.destroy(err as Error));
  return pack as unknown as Readable;
}
