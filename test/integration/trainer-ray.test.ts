// The trainer bridge against a real local Ray head (scripts/ray.sh; scripts/test.mjs starts one for
// the whole run, and this file starts and stops its own when run alone).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect } from 'node:net';
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RayJobsClient } from '../../src/core/trainer/jobs';
import { submitTraining } from '../../src/core/trainer/submit';
import type { SubmitOptions } from '../../src/core/trainer/submit';
import { parseMetrics } from '../../src/core/trainer/metrics';
import { TbrlError } from '../../src/core/errors';
import { REPO, loadVector, makeTask, scratch, writeGroup } from '../unit/trainer-fixtures';
import { RAY_DASHBOARD_PORT, RAY_DASHBOARD_URL, RayHeadForFile } from '../helpers/ray';

const PORT = RAY_DASHBOARD_PORT;
const URL_ = RAY_DASHBOARD_URL;
const head = new RayHeadForFile(URL_);
const client = head.client;
const root = scratch('tbrl-trainer-ray-');
const task = makeTask(root);
const runs = writeGroup(root, loadVector('02-indirect-credit'));
// The node runs the env-server from this checkout; on a real cluster TBRL_CLI names an installed tbrl.
const TBRL_CLI = `${join(REPO, 'node_modules', '.bin', 'tsx')} ${join(REPO, 'src', 'cli', 'main.ts')}`;
const RUN = `${process.pid}-${Date.now()}`;
const submitted = head.submitted;

before(() => head.start());

after(async () => {
  await head.stop();
  rmSync(root, { recursive: true, force: true });
});

function options(more: Partial<SubmitOptions> = {}): SubmitOptions {
  return { cluster: { url: URL_ }, preset: 'dryrun', algorithm: 'depgpo', taskDirs: [task], trajectories: runs, env: { TBRL_CLI }, tag: RUN, localEnv: {}, ...more };
}

async function submit(more: Partial<SubmitOptions> = {}) {
  const r = await submitTraining(options(more));
  if (!submitted.includes(r.submissionId)) submitted.push(r.submissionId);
  return r;
}

// Async: the auth-proxy test serves from this very process while the CLI talks to it.
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src', 'cli', 'main.ts'), ...args], { cwd: REPO, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

test('dryrun: real bundle, log tail to SUCCEEDED, metrics parsed; a retried submit starts no second run', async () => {
  // A bundle no earlier test run uploaded (packages are content-addressed and outlive jobs).
  const fresh = { overrides: [`+tbrl.test_run=${RUN}`] };
  const r = await submit(fresh);
  assert.equal(r.existed, false);
  assert.equal(r.uploaded, true);
  assert.match(r.ray.ray_version, /^2\./);
  let streamed = '';
  const stats = { frames: 0, connections: 0 };
  const job = await client.tail(r.submissionId, (t) => {
    streamed += t;
  }, { stats });
  assert.ok(stats.frames > 0, 'the log came over the websocket');
  assert.equal(job.status, 'SUCCEEDED', streamed.slice(-3000));
  // The tail delivered the whole log once, without duplicates from reconnects.
  assert.equal(streamed, await client.logs(r.submissionId));
  const m = parseMetrics(streamed);
  const c = m.canonical();
  assert.deepEqual(c.rewardMean, [{ step: 0, value: 0.5 }], 'rewards 0.5, 1, 0');
  assert.ok(Math.abs(c.passRate[0].value - 1 / 3) < 1e-12);
  assert.deepEqual(c.depgpoFactorSpread, [{ step: 0, value: 1.75 }], 'f = [0 1.75 0 1.75 1.75 0.875 0.875] in every rollout');
  assert.deepEqual(m.series['depgpo/max_abs_diff'], [{ step: 0, value: 0 }], 'Python recomputed the TypeScript advantages exactly');
  const episode = m.events.find((e) => e.event === 'env-episode');
  assert.ok(episode, `an env-server episode ran on the node:\n${streamed.slice(-2000)}`);
  assert.equal(episode.reward, 1, 'the probe wrote the file the task tests check');
  assert.deepEqual(episode.factors, [2, 0], 'traced DepGPO on the node: the probe step earned all the credit');
  assert.ok(m.events.some((e) => e.event === 'bundle-ok'), JSON.stringify(m.events));
  assert.match(streamed, /dataset: 1 row\(s\) -> train\.parquet/);

  const again = await submit(fresh);
  assert.equal(again.submissionId, r.submissionId);
  assert.equal(again.existed, true);
  assert.equal(again.uploaded, false);
  const same = (await client.list()).filter((j) => j.submission_id === r.submissionId);
  assert.equal(same.length, 1, 'one job for one set of inputs');

  // Same bundle, deliberate re-run: a new job, but the package is already there (GET 200, no PUT).
  const rerun = await submit({ ...fresh, tag: `${RUN}-b` });
  assert.notEqual(rerun.submissionId, r.submissionId);
  assert.equal(rerun.packageUri, r.packageUri);
  assert.equal(rerun.uploaded, false);
  assert.equal((await client.wait(rerun.submissionId, { timeoutMs: 120_000 })).status, 'SUCCEEDED');
});

test('secrets: a local secret never reaches runtime_env, metadata, entrypoint or the package', async () => {
  const secret = `sk-test${'Q'.repeat(32)}`;
  const r = await submit({ localEnv: { OPENAI_API_KEY: secret, WANDB_API_KEY: 'wandb-secret-value-123' }, cluster: { url: URL_, token: 'bearer-token-456789' }, tag: `${RUN}-secret` });
  const details = JSON.stringify(await client.status(r.submissionId));
  for (const s of [secret, 'wandb-secret-value-123', 'bearer-token-456789']) {
    assert.ok(!details.includes(s), 'job details hold no secret');
    assert.ok(!r.bundle.zip.includes(Buffer.from(s)), 'package holds no secret');
  }
  await assert.rejects(submit({ localEnv: { OPENAI_API_KEY: secret }, env: { TBRL_CLI, NOTE: secret }, tag: `${RUN}-leak` }), (e: TbrlError) => e.code === 'secret-in-job' && !e.message.includes(secret));
  await client.wait(r.submissionId, { timeoutMs: 120_000 });
});

test('a failing job shows its error and log tail (GPU preset on a CPU cluster without verl)', async () => {
  const r = await submit({ preset: 'test_8b_2_gpus', algorithm: 'grpo', tag: `${RUN}-fail` });
  const job = await client.wait(r.submissionId, { timeoutMs: 120_000 });
  assert.equal(job.status, 'FAILED');
  const out = await cli(['train', 'status', r.submissionId, '--cluster', URL_]);
  assert.equal(out.code, 1);
  assert.match(out.stdout, /FAILED/);
  assert.match(out.stdout, /last log lines/);
  assert.match(out.stdout, /trains with verl, which is not importable on this node/);
  assert.match(out.stdout, /--preset dryrun/);
});

test('stop works on a long job; delete removes it; the CLI lists and follows', async () => {
  const r = await submit({ overrides: ['+tbrl.dryrun.hold_sec=300'], tag: `${RUN}-long`, taskDirs: [] });
  const deadline = Date.now() + 90_000;
  while (!(await client.logs(r.submissionId).catch(() => '')).includes('holding for 300 s')) {
    assert.ok(Date.now() < deadline, 'the long job reached its hold');
    await new Promise((res) => setTimeout(res, 500));
  }
  const listed = await cli(['train', 'list', '--cluster', URL_]);
  assert.equal(listed.code, 0);
  assert.match(listed.stdout, new RegExp(`${r.submissionId}\\s+RUNNING`));
  const stopped = await cli(['train', 'stop', r.submissionId, '--cluster', URL_, '--wait']);
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.match(stopped.stdout, /STOPPED/);
  const del = await cli(['train', 'delete', r.submissionId, '--cluster', URL_]);
  assert.equal(del.code, 0, del.stderr);
  assert.equal(await client.find(r.submissionId), undefined);
  submitted.splice(submitted.indexOf(r.submissionId), 1);
});

test('tbrl train submit --follow streams to the end and prints the parsed metrics', async () => {
  const out = await cli(['train', 'submit', '--cluster', URL_, '--preset', 'dryrun', '--algorithm', 'grpo', '--trajectories', runs.join(','), '--env', `TBRL_CLI=${TBRL_CLI}`, '--tag', `${RUN}-cli`, '--follow']);
  const id = /Submitted: (\S+)/.exec(out.stdout)?.[1];
  if (id) submitted.push(id);
  assert.equal(out.code, 0, out.stdout + out.stderr);
  assert.match(out.stdout, /env episode skipped: the bundle has no task/);
  assert.match(out.stdout, /SUCCEEDED/);
  assert.match(out.stdout, /metrics: reward 0\.5, pass rate 0\.3333, entropy -, grad norm -, DepGPO factor spread 0\b/, 'GRPO: every factor 1, no spread');
  const m = await cli(['train', 'logs', id!, '--cluster', URL_, '--metrics']);
  assert.equal(m.code, 0, m.stderr);
  const parsed = JSON.parse(m.stdout) as { canonical: Record<string, Array<{ step: number; value: number }>>; events: Array<{ event?: string }> };
  assert.deepEqual(parsed.canonical.rewardMean, [{ step: 0, value: 0.5 }]);
  assert.deepEqual(parsed.canonical.depgpoFactorSpread, [{ step: 0, value: 0 }]);
  assert.ok(parsed.events.some((e) => e.event === 'end'));
});

test('a cluster that is down gives the clear error', async () => {
  const free = createServer();
  await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
  const port = (free.address() as AddressInfo).port;
  await new Promise<void>((r) => free.close(() => r()));
  await assert.rejects(submitTraining(options({ cluster: { url: `http://127.0.0.1:${port}` } })), (e: TbrlError) => e.code === 'ray-unreachable' && /ECONNREFUSED/.test(e.message) && /ray start --head/.test(e.message));
  const out = await cli(['train', 'list', '--cluster', `http://127.0.0.1:${port}`]);
  assert.equal(out.code, 1);
  assert.match(out.stderr, /Cannot reach the Ray cluster at http:\/\/127\.0\.0\.1:\d+\/ \(ECONNREFUSED/);
  assert.match(out.stderr, /Fix: /);
});

// A user's dashboard usually sits behind an authenticating proxy; this one checks a bearer token
// and a header and forwards plain HTTP to the real head, but refuses websocket upgrades.
test('through an auth proxy: 401 without the token, works with it; a tail that cannot connect reconnects, then fails clearly', async () => {
  const proxy = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer proxy-token-123' || req.headers['x-org'] !== 'tbrl') {
      res.writeHead(req.headers.authorization ? 403 : 401).end('denied');
      return;
    }
    const up = request({ host: '127.0.0.1', port: PORT, path: req.url, method: req.method, headers: { ...req.headers, host: `127.0.0.1:${PORT}` } }, (u) => {
      res.writeHead(u.statusCode ?? 502, u.headers);
      u.pipe(res);
    });
    req.pipe(up);
  });
  proxy.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n'));
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const purl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  try {
    const noToken = await cli(['train', 'list', '--cluster', purl], { TBRL_RAY_TOKEN: '' });
    assert.equal(noToken.code, 1);
    assert.match(noToken.stderr, /refused the request \(401/);
    assert.match(noToken.stderr, /export TBRL_RAY_TOKEN/);
    const wrong = await cli(['train', 'list', '--cluster', purl, '--header', 'X-Org: tbrl'], { TBRL_RAY_TOKEN: 'nope' });
    assert.match(wrong.stderr, /\(403/);
    assert.match(wrong.stderr, /was rejected/);
    const ok = await cli(['train', 'list', '--cluster', purl, '--header', 'X-Org: tbrl', '--all'], { TBRL_RAY_TOKEN: 'proxy-token-123' });
    assert.equal(ok.code, 0, ok.stderr);

    const via = new RayJobsClient({ url: purl, token: 'proxy-token-123', headers: { 'x-org': 'tbrl' } });
    const r = await submit({ cluster: { url: purl, token: 'proxy-token-123', headers: { 'x-org': 'tbrl' } }, overrides: ['+tbrl.dryrun.hold_sec=300'], taskDirs: [], tag: `${RUN}-proxy` });
    const started = Date.now();
    await assert.rejects(via.tail(r.submissionId, () => {}, { maxReconnects: 2, reconnectDelayMs: 200 }), (e: TbrlError) => e.code === 'ray-tail-failed' && /3 times/.test(e.message) && /502/.test(e.message) && /train logs .* --follow/.test(e.message));
    assert.ok(Date.now() - started < 30_000);
    assert.equal(await via.stop(r.submissionId), true);
  } finally {
    proxy.close();
  }
});

// A dashboard behind TLS with a private CA (what a user's ingress looks like): plain HTTP and the
// log-tail websocket are forwarded to the real head.
test('TLS with a private CA: refused without --ca-file, submit + websocket tail work with it', async () => {
  const key = join(root, 'tls.key');
  const cert = join(root, 'tls.crt');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=tbrl-test-ca', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const up = request({ host: '127.0.0.1', port: PORT, path: req.url, method: req.method, headers: req.headers }, (u) => {
      res.writeHead(u.statusCode ?? 502, u.headers);
      u.pipe(res);
    });
    req.pipe(up);
  });
  tls.on('upgrade', (req, socket, head) => {
    const up = connect(PORT, '127.0.0.1', () => {
      up.write(`${req.method} ${req.url} HTTP/1.1\r\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`).join('\r\n')}\r\n\r\n`);
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
  const surl = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  try {
    await assert.rejects(new RayJobsClient({ url: surl }).version(), (e: TbrlError) => e.code === 'ray-tls' && /--ca-file/.test(e.message));
    const listed = await cli(['train', 'list', '--cluster', surl, '--ca-file', cert]);
    assert.equal(listed.code, 0, listed.stderr);
    const r = await submit({ cluster: { url: surl, ca: cert }, taskDirs: [], tag: `${RUN}-tls` });
    let log = '';
    const stats = { frames: 0, connections: 0 };
    const job = await new RayJobsClient({ url: surl, ca: cert }).tail(r.submissionId, (t) => (log += t), { stats });
    assert.ok(stats.frames > 0, 'wss through the TLS ingress carried the log');
    assert.equal(job.status, 'SUCCEEDED', log.slice(-2000));
    assert.match(log, /dryrun finished/);
  } finally {
    tls.close();
  }
});
