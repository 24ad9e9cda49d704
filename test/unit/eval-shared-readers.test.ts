import { test } from 'node:test';
import assert from 'node:assert/strict';
import { holdSharedReaders, leaseReader, sharedReaderCount } from '../../src/core/sandbox/shared-readers';

function counter() {
  const log: string[] = [];
  let n = 0;
  return {
    log,
    create: (fail = false) => async () => {
      n++;
      log.push(`create ${n}`);
      if (fail) throw new Error('no such image');
      return { id: n };
    },
    dispose: async (v: { id: number }) => void log.push(`remove ${v.id}`),
  };
}

test('with no hold (one tbrl run) every run creates its own reader and removes it when it lets go', async () => {
  const c = counter();
  const a = leaseReader('baseline:img', c.create(), c.dispose);
  const b = leaseReader('baseline:img', c.create(), c.dispose);
  assert.notEqual((await a.value).id, (await b.value).id);
  await a.release();
  await a.release();
  await b.release();
  assert.deepEqual(c.log, ['create 1', 'create 2', 'remove 1', 'remove 2']);
  assert.equal(sharedReaderCount(), 0);
});

test('while an eval job holds them, runs of one image share one reader; the job\'s end removes it', async () => {
  const c = counter();
  const end = holdSharedReaders();
  const first = leaseReader('baseline:img', c.create(), c.dispose);
  const other = leaseReader('baseline:other', c.create(), c.dispose);
  assert.equal((await first.value).id, 1);
  await first.release();
  // The next run of the image, after the first let go: the same container, not a new one.
  const second = leaseReader('baseline:img', c.create(), c.dispose);
  assert.equal((await second.value).id, 1);
  await other.release();
  assert.deepEqual(c.log, ['create 1', 'create 2']);
  await end();
  // In use when the job ended: removed when its run lets go.
  assert.deepEqual(c.log, ['create 1', 'create 2', 'remove 2']);
  await second.release();
  assert.deepEqual(c.log, ['create 1', 'create 2', 'remove 2', 'remove 1']);
  assert.equal(sharedReaderCount(), 0);
});

test('a reader that could not be created is not kept: the next run tries again', async () => {
  const c = counter();
  const end = holdSharedReaders();
  const broken = leaseReader('originals:img', c.create(true), c.dispose);
  await assert.rejects(broken.value, /no such image/);
  await broken.release();
  const next = leaseReader('originals:img', c.create(), c.dispose);
  assert.equal((await next.value).id, 2);
  await next.release();
  await end();
  assert.deepEqual(c.log, ['create 1', 'create 2', 'remove 2']);
});

test('ending a hold twice at once: both wait for the removal (a process exits only once its readers are gone)', async () => {
  const log: string[] = [];
  const end = holdSharedReaders();
  const lease = leaseReader('baseline:slow', async () => ({ id: 1 }), async () => {
    await new Promise((r) => setTimeout(r, 50));
    log.push('removed');
  });
  await lease.value;
  await lease.release();
  const first = end();
  await end();
  assert.deepEqual(log, ['removed'], 'the second call returned only after the removal');
  await first;
});
