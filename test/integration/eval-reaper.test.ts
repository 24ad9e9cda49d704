/**
 * `tbrl eval-trial --reap PID SINCE`: the reaper of a Ray node's trial server. Once its stdin closes
 * (the server holds the other end, so it closes however the server ends, SIGKILL included) it removes
 * the containers labelled with that PID and created since SINCE, and nothing else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../../src/core/sandbox/types';

const CLI = resolve('src/cli/main.ts');
const IMAGE = 'tbrl-standin/python:3';

test('the reaper removes the dead server\'s containers once its stdin closes, and only those', { timeout: 120_000 }, async () => {
  const docker = new DockerSandboxProvider().docker;
  // A stand-in for the server: a process whose PID labels the containers, killed with SIGKILL.
  const server = spawn('sleep', ['600']);
  const pid = server.pid!;
  const since = Math.floor(Date.now() / 1000);
  const make = (labels: Record<string, string>) => docker.createContainer({ Image: IMAGE, Cmd: ['true'], Labels: { [LABEL_PROJECT]: 'tbrl', [LABEL_RUN]: 'eval-reaper-test', ...labels } });
  const mine = await make({ [LABEL_PID]: String(pid) });
  const other = await make({ [LABEL_PID]: String(pid + 1) });
  try {
    const reaper = spawn(process.execPath, ['--import', 'tsx', CLI, 'eval-trial', '--reap', String(pid), String(since)], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    reaper.stderr.on('data', (d) => (stderr += d));
    // While the pipe is open nothing is removed.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(reaper.exitCode, null, `the reaper waits for its stdin to close: ${stderr}`);
    assert.ok(await docker.getContainer(mine.id).inspect());
    server.kill('SIGKILL');
    reaper.stdin.end();
    const code = await new Promise<number | null>((r) => reaper.on('exit', r));
    assert.equal(code, 0, stderr);
    await assert.rejects(docker.getContainer(mine.id).inspect(), /404|no such container/i, 'the server\'s container is removed');
    assert.ok(await docker.getContainer(other.id).inspect(), 'another PID\'s container stays');
  } finally {
    server.kill('SIGKILL');
    await docker.getContainer(mine.id).remove({ force: true }).catch(() => undefined);
    await docker.getContainer(other.id).remove({ force: true }).catch(() => undefined);
  }
});
