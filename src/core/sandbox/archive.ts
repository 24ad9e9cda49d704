import { Readable } from 'node:stream';
import * as tar from 'tar-stream';

/** A tar holding one regular file (the unit of writeFile: no shell, any bytes). */
export async function singleFileTar(name: string, content: Buffer, mode = 0o644, owner: { uid: number; gid: number } = { uid: 0, gid: 0 }): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name, mode, size: content.length, mtime: new Date(), uid: owner.uid, gid: owner.gid }, content);
  pack.finalize();
  return streamToBuffer(pack as unknown as AsyncIterable<unknown>);
}

export interface TarEntryData {
  name: string;
  type: string;
  mode: number;
  linkname?: string;
  content: Buffer;
}

/** Reads every entry of a tar stream into memory (used for single files and workspace diffs). */
export async function readTarEntries(stream: Readable, filter?: (name: string) => boolean): Promise<TarEntryData[]> {
  const extract = tar.extract();
  const entries: TarEntryData[] = [];
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, body, next) => {
      const keep = !filter || filter(header.name);
      const chunks: Buffer[] = [];
      body.on('data', (c: unknown) => { if (keep) chunks.push(c as Buffer); });
      body.on('end', () => {
        if (keep) {
          entries.push({ name: header.name, type: header.type ?? 'file', mode: header.mode ?? 0o644, linkname: header.linkname ?? undefined, content: Buffer.concat(chunks) });
        }
        next();
      });
      body.resume();
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
    stream.on('error', reject);
  });
  stream.pipe(extract);
  await done;
  return entries;
}

export async function streamToBuffer(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks);
}

export function toReadable(data: Readable | Buffer): Readable {
  return Buffer.isBuffer(data) ? Readable.from([data]) : data;
}
