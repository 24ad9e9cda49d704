import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { FileHistory } from '../../src/core/trace/file-history';
import type { BatchReader, ReadAnswer } from '../../src/core/trace/batch-reader';
import { singleFileTar } from '../../src/core/sandbox/archive';
import type { FileContent } from '../../src/core/trace/file-content';

/**
 * The helper reads the task's files at /proc/<pid>/root, where a symbolic link resolves against the
 * helper's own root: a path under one must come from the archive API (which resolves it in the task
 * container), so the snapshot never shows a helper file as the task's.
 */
test('current(): one round trip for paths and their directories; a path under a symlink or a non-directory goes to the archive API', async () => {
  // What the helper sees under /proc/7/root: /app a directory, /link a symlink (to the task's /app), /app/f.txt a file.
  const helperView: Record<string, ReadAnswer> = {
    '/proc/7/root/app': { kind: 'other', why: 'directory' },
    '/proc/7/root/app/f.txt': { kind: 'file', content: Buffer.from('task file\n') },
    '/proc/7/root/link': { kind: 'symlink' },
    // Through the helper's root the link would reach the helper's file of that name.
    '/proc/7/root/link/f.txt': { kind: 'file', content: Buffer.from('HELPER file\n') },
    '/proc/7/root/app/l': { kind: 'symlink' },
    // The reader only says "other" for a FIFO; the archive says which.
    '/proc/7/root/app/pipe': { kind: 'other', why: 'unreadable (O)' },
    '/proc/7/root/app/big': { kind: 'other', why: 'larger than 16777216 bytes' },
  };
  const asked: string[][] = [];
  const reader = {
    read: async (paths: readonly string[]) => {
      asked.push([...paths]);
      return paths.map((p) => helperView[p] ?? { kind: 'absent' });
    },
  } as unknown as BatchReader;
  const archived: string[] = [];
  // The task container's own view: /link/f.txt is the task's /app/f.txt, /app/l links to it.
  const inTask: Record<string, { link?: string; text?: string; fifo?: true }> = { '/link/f.txt': { text: 'task file\n' }, '/app/l': { link: 'f.txt' }, '/app/f.txt': { text: 'task file\n' }, '/app/pipe': { fifo: true } };
  const getArchive = async (p: string): Promise<Readable> => {
    archived.push(p);
    const e = inTask[p];
    if (!e) throw Object.assign(new Error(`Could not find the file ${p}`), { statusCode: 404 });
    if (e.link || e.fifo) {
      const { pack } = await import('tar-stream');
      const tar = pack();
      tar.entry(e.link ? { name: p.split('/').pop()!, type: 'symlink', linkname: e.link } : { name: p.split('/').pop()!, type: 'fifo' });
      tar.finalize();
      return Readable.from(tar as unknown as AsyncIterable<Buffer>);
    }
    return Readable.from([await singleFileTar(p.split('/').pop()!, Buffer.from(e.text!))]);
  };
  const history = new FileHistory({} as Docker, 'img', getArchive, reader, 'c1');
  const got = (await history.current(['/app/f.txt', '/link/f.txt', '/app/l', '/app/gone', '/app/f.txt/x', '/app/pipe', '/app/big'], 7)).map((r) => (r.status === 'fulfilled' ? r.value : assert.fail(String(r.reason))));
  assert.equal(asked.length, 1, 'one round trip');
  assert.deepEqual(asked[0].slice(0, 3).sort(), ['/proc/7/root/app', '/proc/7/root/app/f.txt', '/proc/7/root/link']);
  const show = (c: FileContent): string => (c.kind === 'file' ? c.content.toString() : c.kind === 'other' ? `other ${c.why}` : c.kind);
  assert.deepEqual(got.map(show), ['task file\n', 'task file\n', 'task file\n', 'absent', 'absent', 'other fifo', 'other larger than 16777216 bytes']);
  // The reader's own answers are kept only for files, directories and files too big: the rest go to the archive API.
  assert.deepEqual(archived, ['/link/f.txt', '/app/l', '/app/gone', '/app/f.txt/x', '/app/pipe', '/app/f.txt']);
});

test('current() without a reader (or before the shell pid is known) reads each path through the archive API', async () => {
  const getArchive = async (p: string): Promise<Readable> => Readable.from([await singleFileTar(p.split('/').pop()!, Buffer.from(`of ${p}`))]);
  const history = new FileHistory({} as Docker, 'img', getArchive, undefined, 'c1');
  const got = (await history.current(['/a', '/b/c'], 7)).map((r) => (r.status === 'fulfilled' ? r.value : assert.fail(String(r.reason))));
  assert.deepEqual(got.map((c) => (c.kind === 'file' ? c.content.toString() : c.kind)), ['of /a', 'of /b/c']);
});
