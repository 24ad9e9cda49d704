import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KILL_SCRIPT } from '../../src/core/sandbox/kill-script';

// The kill script reads /proc with builtins only, so it runs on the host as in a container.
function killScript(...args: string[]): string {
  return execFileSync('bash', ['-c', KILL_SCRIPT, 'tbrl-kill', ...args], { encoding: 'utf8' });
}

const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
};

const shells: ChildProcess[] = [];
after(() => {
  for (const s of shells) if (s.pid) try { process.kill(-s.pid, 'SIGKILL'); } catch { /* gone */ }
});

/**
 * A stand-in for the frame shell whose one command process is saving the shell's state the way
 * shell.ts does (the mark set, then the files written), in two halves 400 ms apart, then idles.
 * Resolves once the first half is written, i.e. while the save is in progress.
 */
async function shellMidSave(stateDir: string): Promise<{ shellPid: number; minTicks: string }> {
  const minTicks = killScript('uptime').trim().split(' ')[0];
  const save = `echo 1 >| ${stateDir}/saving; printf first >| ${stateDir}/opts; sleep 0.4; printf +second >> ${stateDir}/opts; : >| ${stateDir}/saving; exec sleep 100`;
  // Its own process group, so nothing the script signals reaches the test runner's.
  const shell = spawn('bash', ['-c', `bash -c '${save}' & wait; exec sleep 100`], { detached: true, stdio: 'ignore' });
  shells.push(shell);
  for (let i = 0; i < 200; i++) {
    let opts = '';
    try { opts = readFileSync(join(stateDir, 'opts'), 'utf8'); } catch { /* not yet */ }
    if (opts === 'first') return { shellPid: shell.pid!, minTicks };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the stand-in shell never started its save');
}

const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

describe('kill script', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-kill-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('given the state directory, lets a command process finish saving the shell state before killing it', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const { shellPid, minTicks } = await shellMidSave(stateDir);
    const [command] = childrenOf(shellPid);
    killScript('children', String(shellPid), minTicks, stateDir);
    assert.equal(readFileSync(join(stateDir, 'opts'), 'utf8'), 'first+second', 'the save was completed');
    assert.equal(readFileSync(join(stateDir, 'saving'), 'utf8'), '', 'the mark was cleared by the save itself');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(command), false, 'and then the command process was killed');
    assert.equal(alive(shellPid), true, 'the shell itself is never a victim');
  });

  it('without it (the old call), kills mid-save and leaves the truncated state: the case the mark exists for', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const { shellPid, minTicks } = await shellMidSave(stateDir);
    killScript('children', String(shellPid), minTicks);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(readFileSync(join(stateDir, 'opts'), 'utf8'), 'first');
  });

  it('uptime answers clock ticks and the pids cgroup\'s refused forks (what a timeout compares to decide on killing background processes)', () => {
    const [ticks, refused, ...rest] = killScript('uptime').trim().split(' ');
    assert.equal(rest.length, 0);
    const uptimeTicks = Math.round(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
    assert.ok(Math.abs(Number(ticks) - uptimeTicks) < 200, `${ticks} vs ${uptimeTicks}`);
    let expected = 0;
    for (const f of ['/sys/fs/cgroup/pids/pids.events', '/sys/fs/cgroup/pids.events']) {
      try {
        expected = Number(/^max (\d+)$/m.exec(readFileSync(f, 'utf8'))?.[1] ?? 0);
        break;
      } catch { /* not this layout */ }
    }
    assert.ok(/^\d+$/.test(refused) && Number(refused) >= expected, `refused ${refused}, pids.events says ${expected}`);
  });

  it('waits at most about 2 s for a mark that is never cleared (a command can write it too)', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const minTicks = killScript('uptime').trim().split(' ')[0];
    const stuck = `echo 1 >| ${stateDir}/saving; printf first >| ${stateDir}/opts; exec sleep 100`;
    const shell = spawn('bash', ['-c', `bash -c '${stuck}' & wait`], { detached: true, stdio: 'ignore' });
    shells.push(shell);
    for (let i = 0; i < 200 && childrenOf(shell.pid!).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    const [command] = childrenOf(shell.pid!);
    const started = Date.now();
    killScript('children', String(shell.pid), minTicks, stateDir);
    const waited = Date.now() - started;
    assert.ok(waited >= 900 && waited < 5000, `waited ${waited} ms`);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(command), false);
  });
});
