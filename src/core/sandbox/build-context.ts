import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import picomatch from 'picomatch';
import * as tar from 'tar-stream';
import { streamToBuffer } from './archive';

export interface ContextFile {
  /** Path relative to the context root, `/`-separated. */
  path: string;
  mode: number;
  kind: 'file' | 'directory' | 'symlink';
  content?: Buffer;
  linkname?: string;
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

export function collectContext(root: string, options: { ignore?: (path: string) => boolean } = {}): ContextFile[] {
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
      } else if (st.isFile()) out.push({ path: rel, mode: st.mode & 0o7777, kind: 'file', content: readFileSync(abs) });
    }
  };
  walk(root);
  return out;
}

/** Content hash of a build: same files, modes, Dockerfile text and args → same image tag. */
export function contextHash(files: ContextFile[], extra: string): string {
  const h = createHash('sha256');
  h.update(extra);
  for (const f of files) {
    h.update(`\0${f.kind}\0${f.path}\0${f.mode.toString(8)}\0${f.linkname ?? ''}\0`);
    if (f.content) h.update(createHash('sha256').update(f.content).digest());
  }
  return h.digest('hex');
}

export async function packContext(files: ContextFile[], prefix = ''): Promise<Buffer> {
  const pack = tar.pack();
  for (const f of files) {
    const name = prefix + f.path;
    if (f.kind === 'directory') pack.entry({ name, type: 'directory', mode: f.mode });
    else if (f.kind === 'symlink') pack.entry({ name, type: 'symlink', linkname: f.linkname, mode: f.mode });
    else pack.entry({ name, mode: f.mode, size: f.content!.length }, f.content!);
  }
  pack.finalize();
  return streamToBuffer(pack as unknown as AsyncIterable<unknown>);
}
