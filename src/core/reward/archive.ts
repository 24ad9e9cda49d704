import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pack } from 'tar-stream';

export interface ArchiveEntry {
  /** Path inside the archive (relative, `/`-separated). */
  name: string;
  content: Buffer | string;
  mode?: number;
}

async function walk(dir: string, prefix: string, out: Array<{ name: string; abs: string }>): Promise<void> {
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const name = prefix ? `${prefix}/${entry.name}` : entry.name;
    const abs = join(dir, entry.name);
    out.push({ name, abs });
    if (entry.isDirectory()) await walk(abs, name, out);
  }
}

/** A tar of a host directory's contents (modes and symlinks kept) plus extra files, for Sandbox.putArchive. */
export async function tarOf(dir: string | undefined, extra: ArchiveEntry[] = []): Promise<Buffer> {
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => { chunks.push(c as Buffer); });
  const done = new Promise<void>((resolve, reject) => { tar.on('end', resolve); tar.on('error', reject); });
  const files: Array<{ name: string; abs: string }> = [];
  if (dir) await walk(dir, '', files);
  for (const f of files) {
    const st = await lstat(f.abs);
    if (st.isDirectory()) tar.entry({ name: `${f.name}/`, type: 'directory', mode: st.mode & 0o7777 });
    else if (st.isSymbolicLink()) tar.entry({ name: f.name, type: 'symlink', linkname: await readlink(f.abs) });
    else if (st.isFile()) tar.entry({ name: f.name, mode: st.mode & 0o7777 }, await readFile(f.abs));
  }
  for (const e of extra) tar.entry({ name: e.name, mode: e.mode ?? 0o644 }, typeof e.content === 'string' ? Buffer.from(e.content) : e.content);
  tar.finalize();
  await done;
  return Buffer.concat(chunks);
}
