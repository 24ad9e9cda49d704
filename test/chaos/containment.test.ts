/**
 * Containment: hostile commands inside a real sandbox. Each must be stopped by the container's
 * limits or the command timeout, leave the host able to work, and leave no container behind.
 * Host-side checks use `ps` on the host: container processes are visible there, so a process that
 * "escaped" would show up by its unique arguments.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { freemem } from 'node:os';
import { createDockerProvider, type Sandbox } from '../../src/core/sandbox/index';
import { createTracedSandbox } from '../../src/core/trace/index';
import { chaosCase, recordRunId } from './helpers/chaos';

const provider = createDockerProvider();
const runId = `chaos-contain-${process.pid}`;
recordRunId(runId);
const image = { kind: 'image' as const, image: 'tbrl-standin/python:3' };

function hostProcesses(pattern: RegExp): string[] {
  const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((l) => pattern.test(l));
}

async function gone(sb: Sandbox): Promise<boolean> {
  return provider.docker.getContainer(sb.info.containerId).inspect().then(() => false, () => true);
}

/** Runs `fn` in a fresh sandbox, closes it and checks the container is gone and the host can still fork. */
async function inSandbox(limits: Parameters<typeof provider.create>[0]['limits'], fn: (sb: Sandbox) => Promise<string>): Promise<string> {
  const sb = await provider.create({ image, runId, limits });
  let said: string;
  try {
    said = await fn(sb);
  } finally {
    await sb.close();
  }
  assert.ok(await gone(sb), 'container still exists after close');
  assert.equal(spawnSync('true').status, 0, 'the host cannot fork');
  return `${said}; container reaped, host forks`;
}

chaosCase('fork bomb `:(){ :|:& };:` (pids limit 64)', 'capped at 64 processes; a command that times out after forks were refused kills every background process (with a note); the shell answers; container reaped', () => inSandbox({ pids: 64 }, async (sb) => {
  // The bomb's first call returns at once, leaving its processes in the background (reparented, in
  // no command's tree). How far it gets varies: it may hold every pid (the next command, or its
  // state save, cannot fork until its timeout kills the bomb) or settle below the limit.
  const bomb = await sb.exec(':(){ :|:& };:', { timeoutMs: 3000 });
  assert.ok(bomb.exitCode === 0 || bomb.timedOut, JSON.stringify(bomb).slice(0, 300));
  await new Promise((res) => setTimeout(res, 1500));
  const tries = [bomb];
  while (tries.length < 4 && !(tries.length > 1 && tries.at(-1)!.output === 'alive\n')) tries.push(await sb.exec('echo alive', { timeoutMs: 10_000 }));
  const timeouts = tries.filter((t) => t.timedOut);
  for (const t of timeouts) assert.match(t.output, /(process limit refused \d+ fork\(s\)|no process could start in the container \(its process limit reached\)), so every background process was killed too/);
  assert.equal(tries.at(-1)!.output, 'alive\n', `the shell never answered: ${tries.at(-1)!.output.slice(-300)}`);
  // A bomb still running can make the command's own forks retry ("fork: retry" lines around the count).
  const count = await sb.exec('p=(/proc/[0-9]*); echo ${#p[@]}', { timeoutMs: 30_000 });
  const n = Number(/^(\d+)$/m.exec(count.output)?.[1]);
  // One timeout that found refused forks killed the bomb; without one, it is still there, capped.
  if (timeouts.length) assert.ok(n <= 10, `processes left after the kill: ${count.output}`);
  else assert.ok(n > 20 && n <= 64, `processes: ${count.output}`);
  // The cap itself: Docker's limit, and the cgroup's count of forks it refused at that limit.
  assert.equal((await provider.docker.getContainer(sb.info.containerId).inspect()).HostConfig.PidsLimit, 64);
  const events = (await sb.exec('cat /sys/fs/cgroup/pids/pids.events 2>/dev/null || cat /sys/fs/cgroup/pids.events')).output;
  const refused = Number(/^max (\d+)$/m.exec(events)?.[1]);
  assert.ok(refused > 0, `cgroup pids.events: ${events.trim()}`);
  if (!timeouts.length) return `the cgroup refused ${refused} forks at 64; the bomb settled at ${n} processes and the shell answered "alive" at once`;
  const which = timeouts.map((t) => (t === bomb ? 'the bomb\'s own command' : 'an `echo alive`')).join(', ');
  return `the cgroup refused ${refused} forks at 64; ${timeouts.length} timeout(s) (${which}) saw refused forks and killed every background process; then "alive" and ${n} processes left`;
}), { timeout: 90_000 });

chaosCase('fork bomb under tracing (pids limit 64): the kill of every background process meets the tracer helper\'s processes in the same pid namespace', 'the bomb is killed, the tracer helper lives on (its processes entered the namespace from outside) and the next command is traced', async () => {
  const inner = await provider.create({ image, runId, limits: { pids: 64 } });
  const sb = await createTracedSandbox(inner, {});
  try {
    assert.equal(sb.info.tracing.available, true, sb.info.tracing.reason);
    const helperEntry = async () => (await inner.exec('for d in /proc/[0-9]*; do read -r s < $d/stat; set -- ${s##*) }; [ "$2" = 0 ] && echo "${d#/proc/} $(<$d/comm)"; done')).output;
    const before = await helperEntry();
    const sleeper = /^(\d+) sleep$/m.exec(before)?.[1];
    assert.ok(sleeper, `no process from outside the namespace running sleep (the tracer helper's entrypoint): ${before}`);
    await sb.exec(':(){ :|:& };:', { timeoutMs: 3000, trace: true });
    await new Promise((res) => setTimeout(res, 1500));
    const tries = [];
    while (tries.length < 3 && tries.at(-1)?.output !== 'alive\n') tries.push(await sb.exec('echo alive', { timeoutMs: 10_000, trace: true }));
    assert.equal(tries.at(-1)!.output, 'alive\n', tries.map((t) => t.output.slice(-200)).join(' / '));
    const after = await helperEntry();
    assert.match(after, new RegExp(`^${sleeper} sleep$`, 'm'), `the tracer helper's entrypoint was killed: ${after}`);
    const traced = await sb.exec('mkdir -p /app && echo hi > /app/after-bomb.txt', { trace: true });
    assert.deepEqual(traced.trace?.writes?.map((w) => w.path), ['/app/after-bomb.txt']);
    const killed = tries.some((t) => /so every background process was killed too/.test(t.output));
    return `${killed ? 'a timeout killed the bomb' : 'the bomb settled below the limit'}; "alive" after ${tries.length} command(s); tracer helper entrypoint (pid ${sleeper}) alive; the next write traced: /app/after-bomb.txt`;
  } finally {
    await sb.close();
  }
}, { timeout: 90_000 });

chaosCase('memory hog: python allocating 1 GiB (memory limit 128 MiB)', 'OOM-killed command (exit 137, oomKilled), shell usable, host memory untouched', () => inSandbox({ memoryBytes: 128 * 1024 ** 2 }, async (sb) => {
  const before = freemem();
  const r = await sb.exec('python3 -c "x = bytearray(1 << 30); print(len(x))"', { timeoutMs: 60_000 });
  assert.equal(r.timedOut, false);
  assert.equal(r.exitCode, 137, r.output);
  assert.equal(r.oomKilled, true);
  assert.match(r.output, /out-of-memory/);
  assert.equal((await sb.exec('echo still here')).output, 'still here\n');
  return `exit ${r.exitCode}, oomKilled, message "${r.output.trim().split('\n').pop()?.slice(0, 60)}"; host free memory ${Math.round(before / 2 ** 20)} → ${Math.round(freemem() / 2 ** 20)} MiB`;
}), { timeout: 90_000 });

chaosCase('disk filler: dd 10 GB into / (disk limit 64 MiB) and 300 MB into /dev/shm (a 64 MiB tmpfs)', 'watchdog stops the / filler with a disk-limit notice; ENOSPC at 64 MiB in /dev/shm; host disk dropped < 1 GiB; deleting recovers', () => inSandbox({ diskBytes: 64 * 1024 ** 2 }, async (sb) => {
  // Docker's layers live under /var/lib/docker: the writable layer of / is written there.
  const hostAvail = () => Number(spawnSync('df', ['-k', '--output=avail', '/var/lib/docker'], { encoding: 'utf8' }).stdout.split('\n')[1]);
  const before = hostAvail();
  const root = await sb.exec('dd if=/dev/zero of=/fill bs=1M count=10000', { timeoutMs: 90_000 });
  const rootDelta = (before - hostAvail()) / 1024;
  assert.equal(root.timedOut, false, root.output);
  assert.equal(root.diskLimitExceeded, true, root.output);
  assert.notEqual(root.exitCode, null);
  const notice = /\[stopped: the sandbox disk limit of 64 MiB was exceeded \(([^)]+) written\); delete files to continue\]/.exec(root.output);
  assert.ok(notice, root.output);
  assert.ok(rootDelta < 1024, `host disk dropped by ${rootDelta} MB`);
  assert.equal((await sb.exec('rm /fill && echo freed')).output, 'freed\n');
  const size = await sb.exec('df -k --output=size /dev/shm | tail -1');
  assert.equal(Number(size.output.trim()), 65536, `shm size ${size.output}`);
  const r = await sb.exec('dd if=/dev/zero of=/dev/shm/fill bs=1M count=300 2>&1; echo "dd exit $?"; du -m /dev/shm/fill', { timeoutMs: 60_000 });
  assert.match(r.output, /No space left on device/);
  assert.match(r.output, /dd exit 1/);
  const mb = Number(/^(\d+)\s+\/dev\/shm\/fill/m.exec(r.output)?.[1]);
  assert.ok(mb <= 64, `wrote ${mb} MB`);
  assert.equal((await sb.exec('rm /dev/shm/fill && echo freed')).output, 'freed\n');
  const delta = (before - hostAvail()) / 1024;
  assert.ok(Math.abs(delta) < 1024, `host disk moved by ${delta} MB`);
  return `/ filler stopped after ${notice[1]} (exit ${root.exitCode}), host disk −${rootDelta.toFixed(0)} MB at the stop, rm recovered; /dev/shm dd stopped at ${mb} MB with ENOSPC; host disk moved ${delta.toFixed(0)} MB overall (other engineers' writes included)`;
}), { timeout: 120_000 });

chaosCase('infinite output: `yes` for 3 s, then 50 MB of /dev/urandom through base64', 'timed out / finished with output capped at 64 KiB (head + tail), drop counted, host RSS bounded', () => inSandbox({}, async (sb) => {
  const rss0 = process.memoryUsage().rss;
  const r = await sb.exec('yes chaos-output', { timeoutMs: 3000 });
  assert.equal(r.timedOut, true);
  assert.ok(r.output.length <= 64 * 1024 + 512, `kept ${r.output.length} chars`);
  assert.ok(r.droppedBytes > 1_000_000, `dropped only ${r.droppedBytes}`);
  const b = await sb.exec('head -c 50000000 /dev/urandom | base64', { timeoutMs: 60_000 });
  assert.equal(b.exitCode, 0);
  assert.ok(b.output.length <= 64 * 1024 + 512 && b.droppedBytes > 60_000_000, `${b.output.length} kept, ${b.droppedBytes} dropped`);
  const rssGrowth = (process.memoryUsage().rss - rss0) / 2 ** 20;
  assert.ok(rssGrowth < 300, `host process grew ${rssGrowth} MiB`);
  assert.equal((await sb.exec('echo ok')).output, 'ok\n');
  return `yes: timed out, kept ${r.output.length} B, dropped ${(r.droppedBytes / 1e6).toFixed(0)} MB; base64: kept ${b.output.length} B, dropped ${(b.droppedBytes / 1e6).toFixed(0)} MB; host RSS +${rssGrowth.toFixed(0)} MiB`;
}), { timeout: 120_000 });

chaosCase('command ignoring SIGTERM (bash trap "" TERM loop; python SIG_IGN), timeout 2 s', 'killed at the timeout (SIGKILL after TERM), nothing left running, shell usable', () => inSandbox({}, async (sb) => {
  const t0 = Date.now();
  const r = await sb.exec('trap "" TERM; while :; do sleep 0.2; done', { timeoutMs: 2000 });
  const bashMs = Date.now() - t0;
  assert.equal(r.timedOut, true);
  const t1 = Date.now();
  const p = await sb.exec('python3 -c "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"', { timeoutMs: 2000 });
  const pyMs = Date.now() - t1;
  assert.equal(p.timedOut, true);
  assert.ok(bashMs < 15_000 && pyMs < 15_000, `took ${bashMs} / ${pyMs} ms`);
  const left = await sb.exec('ps -eo args | grep -E "time.sleep|sleep 0.2" | grep -v grep | wc -l');
  assert.equal(left.output.trim(), '0', 'the ignoring process survived');
  assert.equal((await sb.exec('echo ok')).output, 'ok\n');
  return `bash loop stopped after ${(bashMs / 1000).toFixed(1)} s, python after ${(pyMs / 1000).toFixed(1)} s; 0 survivors`;
}), { timeout: 90_000 });

chaosCase('processes escaping into the background: setsid nohup, double fork, disown', 'command returns promptly; escapees live only inside the container and die with it (none on the host)', async () => {
  const marks = ['4242.5', '4343.5', '4444.5'];
  const pattern = new RegExp(`sleep (${marks.map((m) => m.replace('.', '\\.')).join('|')})`);
  const said = await inSandbox({}, async (sb) => {
    const t0 = Date.now();
    const r = await sb.exec(`setsid nohup sleep ${marks[0]} >/dev/null 2>&1 & ( ( sleep ${marks[1]} </dev/null >/dev/null 2>&1 & ) & ) ; sleep ${marks[2]} >/dev/null 2>&1 & disown; echo launched`, { timeoutMs: 10_000 });
    const ms = Date.now() - t0;
    assert.match(r.output, /launched/);
    assert.equal(r.timedOut, false, 'the command waited for its escapees');
    await new Promise((res) => setTimeout(res, 300));
    const inside = Number((await sb.exec(`ps -eo args | grep -cE "${pattern.source}"`)).output.trim()) - 1; // minus the grep itself
    const onHost = hostProcesses(pattern).length;
    assert.ok(inside >= 3 || onHost >= 3, `escapees not running: inside ${inside}, host ${onHost}`);
    return `returned in ${ms} ms with ${onHost} escapees visible on the host (container pid namespace)`;
  });
  await new Promise((res) => setTimeout(res, 500));
  const left = hostProcesses(pattern);
  assert.deepEqual(left, [], 'escapees outlived the container');
  return `${said}; after close 0 left on the host`;
}, { timeout: 90_000 });
