import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, closeSync, ftruncateSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar-stream';
import { collectContext, contextHash, packContext, ContextFileTooLargeError } from '../../src/core/sandbox/build-context';

function sparse(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  ftruncateSync(fd, bytes);
  closeSync(fd);
}

test('a 200 MiB build context streams through hash and tar without holding the file in memory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-ctx-big-'));
  writeFileSync(join(dir, 'Dockerfile'), 'FROM scratch\n');
  sparse(join(dir, 'weights.bin'), 200 * 1024 ** 2);
  symlinkSync('/etc/shadow', join(dir, 'link'));
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 20);
  try {
    const files = collectContext(dir);
    const hash = await contextHash(files, 'x');
    assert.match(hash, /^[0-9a-f]{64}$/);
    const extract = tar.extract();
    const seen: Record<string, { size: number; type: string; linkname?: string | null }> = {};
    extract.on('entry', (header, stream, next) => {
      let size = 0;
      stream.on('data', (c: unknown) => { size += (c as Buffer).length; });
      stream.on('end', () => { seen[header.name] = { size, type: header.type ?? 'file', linkname: header.linkname }; next(); });
    });
    const done = new Promise<void>((resolve, reject) => { extract.on('finish', () => resolve()); extract.on('error', reject); });
    packContext(files).pipe(extract);
    await done;
    assert.equal(seen['weights.bin'].size, 200 * 1024 ** 2);
    // The link travels as a link: its target is never read on the host.
    assert.equal(seen.link.type, 'symlink');
    assert.equal(seen.link.linkname, '/etc/shadow');
    assert.equal(seen.link.size, 0);
  } finally {
    clearInterval(sampler);
  }
  const grewMiB = (peak - base) / 1024 ** 2;
  assert.ok(grewMiB < 100, `RSS grew by ${grewMiB.toFixed(0)} MiB for a 200 MiB file`);
});

test('a context file over the tar limit names itself and suggests .dockerignore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-ctx-huge-'));
  sparse(join(dir, 'dataset.tar'), 9 * 1024 ** 3);
  assert.throws(() => collectContext(dir), (err: unknown) => {
    assert.ok(err instanceof ContextFileTooLargeError);
    assert.match(err.message, /dataset\.tar/);
    assert.match(err.message, /\.dockerignore/);
    return true;
  });
});
