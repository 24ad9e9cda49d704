import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import * as tar from 'tar-stream';

/** Files larger than this are not diffed line by line (their write is reported as not diffed). */
export const MAX_DIFF_BYTES = 16 * 1024 * 1024;

export type FileContent =
  | { kind: 'file'; content: Buffer }
  | { kind: 'absent' }
  /** A directory, device, or a file over MAX_DIFF_BYTES: exists, but has no lines we diff. */
  | { kind: 'other'; why: string };

/**
 * Reads one path through a Docker archive getter, looking only at the first tar entry: a written
 * path that turns out to be a directory (`mv build dist`) must not stream the whole tree. Follows
 * symlinks a few hops like open(2) would. Any "no such file" answer means absent.
 */
export async function readThroughArchive(getArchive: (path: string) => Promise<Readable>, path: string): Promise<FileContent> {
  let current = path;
  for (let hop = 0; hop < 8; hop++) {
    let stream: Readable;
    try {
      stream = await getArchive(current);
    } catch (err) {
      if (isMissing(err)) return { kind: 'absent' };
      throw err;
    }
    const first = await firstEntry(stream);
    if (!first) return { kind: 'absent' };
    if (first.type === 'symlink' && first.linkname) {
      current = posix.resolve(posix.dirname(current), first.linkname);
      continue;
    }
    if (first.type !== 'file' && first.type !== 'contiguous-file') return { kind: 'other', why: first.type };
    if (!first.content) return { kind: 'other', why: `larger than ${MAX_DIFF_BYTES} bytes` };
    return { kind: 'file', content: first.content };
  }
  return { kind: 'other', why: 'too many symbolic links' };
}

function isMissing(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: string; message?: string; cause?: unknown };
  // dockerode words every 404 as "no such container - <daemon text>"; the daemon's text tells a missing file from a gone container.
  if (e?.statusCode === 404 && (/could not find the file|no such file/i.test(e.message ?? '') || !/no such container:/i.test(e.message ?? ''))) return true;
  if (e?.code === 'SANDBOX_FILE' && /no such file/i.test(e.message ?? '')) return true;
  return false;
}

async function firstEntry(stream: Readable): Promise<{ type: string; linkname?: string; content?: Buffer } | undefined> {
  const extract = tar.extract();
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (v: { type: string; linkname?: string; content?: Buffer } | undefined) => {
      if (settled) return;
      settled = true;
      resolve(v);
      // The rest of the archive is not needed; stop the daemon streaming it.
      stream.unpipe(extract);
      stream.destroy();
      extract.destroy();
    };
    extract.on('entry', (header, body, next) => {
      const type = header.type ?? 'file';
      if (type !== 'file' && type !== 'contiguous-file') {
        finish({ type, linkname: header.linkname ?? undefined });
        body.resume();
        return;
      }
      if ((header.size ?? 0) > MAX_DIFF_BYTES) {
        finish({ type });
        body.resume();
        return;
      }
      const chunks: Buffer[] = [];
      body.on('data', (c: unknown) => { chunks.push(c as Buffer); });
      body.on('end', () => {
        finish({ type, content: Buffer.concat(chunks) });
        next();
      });
    });
    extract.on('finish', () => finish(undefined));
    extract.on('error', (err) => { if (!settled) { settled = true; reject(err); } });
    stream.on('error', (err) => { if (!settled) { settled = true; reject(err); } });
    stream.pipe(extract);
  });
}
