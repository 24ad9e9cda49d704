import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideDiskPoll, diskLimitNotice, formatDiskSize, DiskWatchdog, type DiskPollState } from '../../src/core/sandbox/disk-watchdog';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const timing = { intervalMs: 2000, fastIntervalMs: 250 };

describe('disk watchdog decision', () => {
  it('stops once on crossing the limit, not again while the agent recovers, again on new growth', () => {
    const limit = 64 * MiB;
    let state: DiskPollState = {};
    const step = (size: number) => {
      const d = decideDiskPoll(state, size, limit, timing);
      state = d.state;
      return d.stop;
    };
    assert.equal(step(10 * MiB), false);
    assert.equal(step(64 * MiB), false, 'at the limit is allowed');
    assert.equal(step(300 * MiB), true);
    assert.equal(step(300 * MiB), false, 'still over but not growing: ls/rm must keep working');
    assert.equal(step(300 * MiB + 512 * 1024), false, 'small writes while over are recovery, not a filler');
    assert.equal(step(310 * MiB), true, 'a new writer while over is stopped');
    assert.equal(step(1 * MiB), false, 'deleted');
    assert.equal(state.trippedAt, undefined);
    assert.equal(step(65 * MiB), true, 'crossing again after recovery stops again');
  });

  it('polls slowly far from the limit and fast when the headroom is small or the layer grows', () => {
    assert.equal(decideDiskPoll({}, 0, 8 * GiB, timing).delayMs, 2000);
    assert.equal(decideDiskPoll({}, 0, 64 * MiB, timing).delayMs, 250, '64 MiB fills in well under 2 s');
    const mid = decideDiskPoll({}, 7 * GiB, 8 * GiB, timing).delayMs;
    assert.ok(mid > 250 && mid <= 1000, `1 GiB of headroom: ${mid}`);
    assert.equal(decideDiskPoll({ previous: 0 }, 100 * MiB, 8 * GiB, timing).delayMs, 250, 'growing');
    assert.equal(decideDiskPoll({ previous: 0 }, 512 * 1024, 8 * GiB, timing).delayMs, 2000, 'sub-MiB change is noise');
  });

  it('formats sizes and the notice the agent sees', () => {
    assert.equal(formatDiskSize(8 * GiB), '8 GiB');
    assert.equal(formatDiskSize(8.3 * GiB), '8.3 GiB');
    assert.equal(formatDiskSize(64 * MiB), '64 MiB');
    assert.equal(formatDiskSize(441.4 * MiB), '441.4 MiB');
    assert.equal(
      diskLimitNotice(8 * GiB, 8.3 * GiB),
      '[stopped: the sandbox disk limit of 8 GiB was exceeded (8.3 GiB written); delete files to continue]',
    );
  });

  it('reports once per crossing, re-baselines on what the killed writers left, and stops polling on stop()', async () => {
    const sizes = [10 * MiB, 100 * MiB, 120 * MiB, 120 * MiB, 125 * MiB];
    let i = 0;
    const exceeded: number[] = [];
    const dog = new DiskWatchdog({
      limitBytes: 64 * MiB,
      measure: async () => sizes[Math.min(i++, sizes.length - 1)],
      onExceeded: async (n) => { exceeded.push(n); },
      timing: { intervalMs: 5, fastIntervalMs: 5 },
    });
    await dog.poll(); // 10
    await dog.poll(); // 100: stop; re-measures 120 as the baseline
    await dog.poll(); // 120: not new growth
    assert.deepEqual(exceeded, [100 * MiB]);
    await dog.poll(); // 125 > 120 + 1 MiB: a new writer
    assert.deepEqual(exceeded, [100 * MiB, 125 * MiB]);
    dog.start();
    dog.stop();
    const polls = i;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(i, polls, 'no poll after stop()');
  });
});
