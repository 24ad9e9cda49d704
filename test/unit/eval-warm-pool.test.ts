import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvalSandboxPool, warmLookahead } from '../../src/core/eval/warm-pool';
import type { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import type { SandboxSpec } from '../../src/core/sandbox/types';

/** A provider that makes numbered fake sandboxes and logs creates, adoptions and closes. */
function fakeProvider(opts: { failWarm?: boolean; closeDelayMs?: number } = {}) {
  const log: string[] = [];
  let n = 0;
  const make = async (spec: SandboxSpec) => {
    const id = ++n;
    if (opts.failWarm && spec.runId.startsWith('warm')) throw new Error('daemon said no');
    log.push(`create ${id} ${spec.runId}`);
    return {
      id,
      info: { containerId: `c${id}` },
      adoptRun: (runId: string) => void log.push(`adopt ${id} ${runId}`),
      close: async () => {
        if (opts.closeDelayMs) await new Promise((r) => setTimeout(r, opts.closeDelayMs));
        log.push(`close ${id}`);
      },
    };
  };
  const provider = { create: make, createDocker: make } as unknown as DockerSandboxProvider;
  return { provider, log };
}

const spec = (task: string, runId = 'run'): SandboxSpec => ({ image: { kind: 'dockerfile', context: `/tasks/${task}`, dockerfile: 'Dockerfile' }, runId, network: false });
const settle = () => new Promise((r) => setImmediate(r));

test('a queued trial takes the sandbox made ahead for its task, each one exactly once, and adopts its run id', async () => {
  const { provider, log } = fakeProvider();
  const pool = new EvalSandboxPool(provider, { lookahead: 2, maxPendingRemovals: 2, runLabel: 'warm-1' });
  pool.prewarm([spec('a'), spec('a'), spec('b')]);
  await settle();
  // The lookahead bounds what is made ahead: two of the three queued trials.
  assert.deepEqual(log, ['create 1 warm-1', 'create 2 warm-1']);
  const first = (await pool.create(spec('a', 'r1'))) as unknown as { id: number };
  const second = (await pool.create(spec('a', 'r2'))) as unknown as { id: number };
  const third = (await pool.create(spec('a', 'r3'))) as unknown as { id: number };
  assert.deepEqual([first.id, second.id], [1, 2]);
  assert.equal(third.id, 3, 'with none left the trial makes its own');
  assert.ok(log.includes('adopt 1 r1') && log.includes('adopt 2 r2'));
  assert.deepEqual(pool.stats, { warmHits: 2, coldCreates: 1, warmed: 2, discarded: 0 });
  await pool.close();
});

test('sandboxes of another task are not handed out, and the job end removes the ones no trial took', async () => {
  const { provider, log } = fakeProvider();
  const pool = new EvalSandboxPool(provider, { lookahead: 4, maxPendingRemovals: 2, runLabel: 'warm-1' });
  pool.prewarm([spec('b')]);
  const mine = (await pool.create(spec('a', 'r1'))) as unknown as { id: number };
  assert.equal(mine.id, 2);
  await pool.close();
  assert.ok(log.includes('close 1'), `the unused warm sandbox is removed: ${log.join(', ')}`);
  assert.ok(!log.includes('close 2'), 'the trial\'s own sandbox is the trial\'s to close');
  // After close nothing more is made ahead.
  pool.prewarm([spec('a')]);
  await settle();
  assert.equal(log.filter((l) => l.startsWith('create')).length, 2);
});

test('sandboxes on a sidecar network or with a workspace are never pooled', () => {
  assert.equal(EvalSandboxPool.keyOf({ ...spec('a'), networkName: 'tbrl-net-1' }), undefined);
  assert.equal(EvalSandboxPool.keyOf({ ...spec('a'), workspace: { hostPath: '/w', containerPath: '/w', mode: 'copy' } }), undefined);
  assert.notEqual(EvalSandboxPool.keyOf(spec('a')), EvalSandboxPool.keyOf({ ...spec('a'), network: true }));
  assert.equal(EvalSandboxPool.keyOf(spec('a', 'r1')), EvalSandboxPool.keyOf(spec('a', 'r2')), 'the run id is not part of the key');
});

test('a failed warm create falls back to the trial making its own', async () => {
  const { provider } = fakeProvider({ failWarm: true });
  const pool = new EvalSandboxPool(provider, { lookahead: 2, maxPendingRemovals: 2, runLabel: 'warm-1' });
  pool.prewarm([spec('a')]);
  const sb = (await pool.create(spec('a', 'r1'))) as unknown as { id: number };
  assert.equal(sb.id, 2);
  assert.equal(pool.stats.coldCreates, 1);
  await pool.close();
});

test('deferred removals run in the background, at most maxPendingRemovals at once, and close waits for all of them', async () => {
  const { provider, log } = fakeProvider({ closeDelayMs: 30 });
  const pool = new EvalSandboxPool(provider, { lookahead: 1, maxPendingRemovals: 2, runLabel: 'warm-1' });
  const boxes = await Promise.all([1, 2, 3].map((i) => pool.create(spec('a', `r${i}`))));
  const t0 = Date.now();
  await pool.deferClose(() => boxes[0].close());
  await pool.deferClose(() => boxes[1].close());
  assert.ok(Date.now() - t0 < 25, 'two pending removals do not hold the trials up');
  assert.ok(!log.includes('close 1'));
  await pool.deferClose(() => boxes[2].close());
  assert.ok(log.includes('close 1') || log.includes('close 2'), 'the third waited for room');
  await pool.close();
  assert.deepEqual(log.filter((l) => l.startsWith('close')).sort(), ['close 1', 'close 2', 'close 3']);
});

test('warm sandboxes are made only for idle cores unless TBRL_EVAL_WARM_POOL gives a number', () => {
  // 8 trials on 2 cores (the bench's case): every core is busy with trials, so none ahead.
  assert.equal(warmLookahead(8, 2, 0.5), 0);
  // 4 trials on 16 quiet cores: capped at 4 (and at the concurrency below that).
  assert.equal(warmLookahead(4, 16, 1), 4);
  assert.equal(warmLookahead(2, 16, 1), 2);
  // Other work on the machine counts: load 13.5 on 16 cores leaves 2 idle.
  assert.equal(warmLookahead(4, 16, 13.5), 2);
  // A number forces it, still capped; 0 is none; anything else is the automatic choice.
  assert.equal(warmLookahead(8, 2, 9, '3'), 3);
  assert.equal(warmLookahead(8, 2, 9, '9'), 4);
  assert.equal(warmLookahead(4, 16, 1, '0'), 0);
  assert.equal(warmLookahead(4, 16, 1, 'auto'), 4);
});

test('a pool whose lookahead is 0 now makes nothing ahead and creates on demand', async () => {
  const { provider, log } = fakeProvider();
  let lookahead = 0;
  const pool = new EvalSandboxPool(provider, { lookahead: () => lookahead, maxPendingRemovals: 2, runLabel: 'warm-1' });
  pool.prewarm([spec('a'), spec('a')]);
  await settle();
  assert.deepEqual(log, []);
  lookahead = 1;
  pool.prewarm([spec('a'), spec('a')]);
  await settle();
  assert.deepEqual(log, ['create 1 warm-1']);
  await pool.close();
});
