// scripts/ray.sh next to another Ray on the same machine: the studio's head (started by
// scripts/test.mjs for the integration run, or here when this file runs alone) plays the other Ray;
// a second head on its own port base starts, answers job submissions (its dashboard agent bound
// its own port, so no "No available agent"), and stops without touching the first. A port that
// another program holds is named before anything starts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { RayJobsClient } from '../../src/core/trainer/jobs';
import { RAY_DASHBOARD_URL, RAY_SH } from '../helpers/ray';

const FIRST_BASE = Number(process.env.TBRL_RAY_PORT_BASE ?? 48000);
// Ports base..base+39 per head: the second head starts 50 above the first (empty overrides read as unset).
const SECOND_BASE = FIRST_BASE + 50;
const secondEnv = { ...process.env, TBRL_RAY_PORT_BASE: String(SECOND_BASE), TBRL_RAY_PORT: '', TBRL_RAY_DASHBOARD_PORT: '', TBRL_RAY_TMP: '' };
let startedFirst = false;

function raySh(cmd: string, env: NodeJS.ProcessEnv = process.env): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('bash', [RAY_SH, cmd], { env, encoding: 'utf8' });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** The GCS and raylet among a head's processes. Workers and job drivers come and go (the other
 * trainer tests submit to the first head meanwhile): one that exited since it was listed is no core. */
function core(pids: string[]): string[] {
  const comm = (p: string): string => { try { return readFileSync(`/proc/${p}/comm`, 'utf8').trim(); } catch { return ''; } };
  return pids.filter((p) => ['gcs_server', 'raylet'].includes(comm(p)));
}

/** The PIDs `ray.sh stop` would end for the head on this port base. */
function headPids(env: NodeJS.ProcessEnv): string[] {
  return raySh('pids', env).stdout.split('\n').filter(Boolean).sort();
}

before(() => {
  if (raySh('status').status !== 0) {
    startedFirst = true;
    const r = raySh('start');
    assert.equal(r.status, 0, r.stderr);
  }
});

after(() => {
  raySh('stop', secondEnv);
  if (startedFirst) raySh('stop');
});

test('a port another program holds is named before anything starts', async () => {
  const agentPort = SECOND_BASE + 3;
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(agentPort, '127.0.0.1', r));
  try {
    const r = raySh('start', secondEnv);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stderr, new RegExp(`port ${agentPort} \\(dashboard agent\\) is already in use`));
    assert.match(r.stderr, /TBRL_RAY_PORT_BASE=<port> scripts\/ray\.sh start/);
    assert.deepEqual(headPids(secondEnv), [], 'nothing was started');
  } finally {
    holder.close();
  }
});

test('a second head on its own ports runs a job next to the first, and its stop leaves the first running', { timeout: 240_000 }, async () => {
  const firstPids = headPids(process.env);
  const firstCore = core(firstPids);
  assert.equal(firstCore.length, 2, `the first head's processes: ${firstPids.join(' ')}`);
  const started = raySh('start', secondEnv);
  assert.equal(started.status, 0, started.stderr);
  const url = `http://127.0.0.1:${SECOND_BASE + 1}`;
  assert.match(started.stdout, new RegExp(`head up: ${url} \\(ports ${SECOND_BASE}-${SECOND_BASE + 39}`));
  assert.notEqual(url, RAY_DASHBOARD_URL);

  const client = new RayJobsClient({ url });
  const id = `tbrl-ports-${process.pid}-${Date.now()}`;
  await client.submit({ entrypoint: 'python -c "print(6 * 7)"', submission_id: id, runtime_env: {}, metadata: {} });
  const job = await client.wait(id, { timeoutMs: 120_000 });
  assert.equal(job.status, 'SUCCEEDED', JSON.stringify(job));
  assert.match(await client.logs(id), /42/);

  const secondPids = headPids(secondEnv);
  assert.ok(secondPids.length > 3);
  assert.deepEqual(secondPids.filter((p) => firstPids.includes(p)), [], 'the two heads share no process');
  const stopped = raySh('stop', secondEnv);
  assert.equal(stopped.status, 0, stopped.stderr);
  assert.deepEqual(headPids(secondEnv), [], 'the second head is gone');
  const stillThere = headPids(process.env);
  assert.deepEqual(firstCore.filter((p) => stillThere.includes(p)), firstCore, 'the first head\'s GCS and raylet are still there');
  assert.equal(raySh('status').status, 0, 'the first head still answers');
  assert.ok((await new RayJobsClient({ url: RAY_DASHBOARD_URL }).version()).ray_version);
});
