// The env-server scores a Tev task (a progress contract) as `tbrl run` does: PPRS, R = 1[pass] +
// 0.25·Φ(s_T). A trainer's group of partial attempts then has a reward spread where the strict
// verifier alone gives every attempt 0 (the Tev paper's argument; bench/train_bench.py counts it).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize } from '../../src/core/synth/generate';
import { writeSynthesizedTask } from '../../src/core/synth/write';
import { loadTask } from '../../src/core/tasks/load';
import { oracleTurns } from '../../src/core/agent/oracle';
import { EpisodeEnvironment } from '../../src/core/envserver/environment';
import type { RewardRecord } from '../../src/core/trajectory/schema';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-envserver-pprs-'));
const env = new EpisodeEnvironment();
after(async () => {
  await env.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('a Tev episode cut short earns λ·Φ of its partial state; the empty one 0; the full one 1 + λ', { timeout: 900_000 }, async () => {
  const t = synthesize({ domain: 'data-eng', tier: 'unit', seed: 1 });
  const dir = join(scratch, t.id);
  await writeSynthesizedTask(t, dir, 'terminal-bench');
  const turns = oracleTurns(await loadTask(dir)).turns;

  const episode = async (cut: number): Promise<{ reward: number; record: RewardRecord }> => {
    await env.reset({ task: dir, maxSteps: turns.length + 1, trace: false });
    for (const a of turns.slice(0, cut)) if ((await env.step({ action: a })).done) break;
    const e = await env.evaluate({ endReason: 'max-steps' });
    assert.ok(e.info.rewardRecord, 'the episode was scored');
    return { reward: e.reward, record: e.info.rewardRecord };
  };

  const empty = await episode(0);
  assert.deepEqual(empty.record.pprs, { pass: false, phi: 0, lambda: 0.25 });
  assert.equal(empty.reward, 0);

  // Partway along the reference: some nodes credited, the strict verifier still fails.
  const partial = await episode(Math.ceil(turns.length * 0.6));
  assert.equal(partial.record.pprs?.pass, false);
  assert.ok(partial.record.pprs!.phi > 0 && partial.record.pprs!.phi < 1, `Φ ${partial.record.pprs?.phi}`);
  assert.equal(partial.reward, 0.25 * partial.record.pprs!.phi);

  const full = await episode(turns.length);
  assert.deepEqual(full.record.pprs, { pass: true, phi: 1, lambda: 0.25 });
  assert.equal(full.reward, 1.25);
});
