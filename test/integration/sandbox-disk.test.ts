import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createDockerProvider, DockerSandbox, type Sandbox } from '../../src/core/sandbox/index';

const provider = createDockerProvider();
const runId = `test-disk-${process.pid}`;
// debian-slim has no procps: processes are counted through /proc with builtins.
const image = { kind: 'image' as const, image: 'debian:bookworm-slim' };
const limits = { diskBytes: 64 * 1024 ** 2 };
const GiB = 1024 ** 3;

/** Free bytes on the filesystem holding Docker's layers, as the host sees it. */
function hostFree(): number {
  const df = spawnSync('df', ['-k', '--output=avail', '/var/lib/docker'], { encoding: 'utf8' });
  return Number(df.stdout.split('\n')[1]) * 1024;
}

/** Live (not zombie) `dd` processes inside the container. */
const countDd = 'n=0; for d in /proc/[0-9]*; do read -r s < $d/stat 2>/dev/null || continue; case "$s" in *"(dd) "[!Z]*) n=$((n+1));; esac; done; echo "dd:$n"';

const open: Sandbox[] = [];
after(async () => {
  await Promise.all(open.map((s) => s.close()));
});

describe('sandbox disk limit (watchdog on overlay2/ext4)', () => {
  it('stops a foreground disk filler, keeps the host disk, and lets the agent delete files', async () => {
    const sb = await provider.create({ image, runId, limits });
    open.push(sb);
    const before = hostFree();
    const r = await sb.exec('dd if=/dev/zero of=/fill bs=1M count=10000', { timeoutMs: 90_000 });
    const dropped = before - hostFree();
    assert.equal(r.timedOut, false, r.output);
    assert.equal(r.diskLimitExceeded, true, r.output);
    assert.notEqual(r.exitCode, null);
    assert.notEqual(r.exitCode, 0);
    assert.match(r.output, /\[stopped: the sandbox disk limit of 64 MiB was exceeded \(\d+(\.\d)? (MiB|GiB) written\); delete files to continue\]/);
    assert.equal(r.oomKilled, undefined, 'a disk stop is not an OOM kill');
    // Other engineers write to the same disk, so the bound is loose; without the watchdog dd writes ~10 GB.
    assert.ok(dropped < GiB, `host free space dropped by ${(dropped / GiB).toFixed(2)} GiB`);
    const rm = await sb.exec('rm /fill && echo ok');
    assert.equal(rm.output, 'ok\n');
    assert.equal(rm.exitCode, 0);
    assert.equal(rm.diskLimitExceeded, undefined);
    const poll = (sb as DockerSandbox).diskPollMs;
    assert.ok(poll !== undefined && poll > 0, 'the watchdog polled');
    // Under the limit again: ordinary writes go through untouched.
    const small = await sb.exec('dd if=/dev/zero of=/small bs=1M count=8 2>/dev/null && sleep 2.5 && echo written', { timeoutMs: 30_000 });
    assert.equal(small.output, 'written\n');
    assert.equal(small.diskLimitExceeded, undefined);
  });

  it('refuses a disk limit that could run nothing, naming the fix, and creates no container', async () => {
    for (const diskBytes of [0, -1, Number.NaN, 1000]) {
      await assert.rejects(provider.create({ image, runId, limits: { diskBytes } }), (err: Error & { code?: string; fix?: string }) => {
        assert.equal(err.code, 'BAD_SANDBOX_LIMIT');
        assert.match(err.message, /diskBytes/);
        return true;
      });
    }
    const left = await provider.docker.listContainers({ all: true, filters: { label: [`dev.tbrl.run=${runId}`] } });
    assert.equal(left.length, open.length);
  });

  it('stops a double-forked background filler and says so in the next result', async () => {
    const sb = await provider.create({ image, runId, limits });
    open.push(sb);
    await sb.exec('export KEEP=before');
    const started = await sb.exec('(dd if=/dev/zero of=/bgfill bs=1M count=10000 2>/dev/null &) ; echo started');
    assert.equal(started.output, 'started\n');
    let r = await sb.exec('sleep 1');
    for (let i = 0; i < 30 && !r.diskLimitExceeded; i++) r = await sb.exec('sleep 1');
    assert.equal(r.diskLimitExceeded, true, r.output);
    assert.match(r.output, /\[stopped: the sandbox disk limit of 64 MiB was exceeded/);
    assert.notEqual(r.exitCode, null);
    const dd = await sb.exec(countDd);
    assert.equal(dd.output.trim(), 'dd:0');
    const rm = await sb.exec('rm /bgfill && echo ok');
    assert.equal(rm.output, 'ok\n');
    // The shell survived the kill and so did its state: a stop that lands while the killed command
    // saves it waits for the save (kill-script.ts), instead of leaving truncated files behind.
    assert.equal((await sb.exec('echo $KEEP; wc -c < "$__tbrl_d/saving"')).output, 'before\n0\n');
  });
});
