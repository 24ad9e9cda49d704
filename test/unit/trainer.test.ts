import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildZip } from '../../src/core/trainer/zip';
import { buildBundle, packageUriFor, validateOverrides } from '../../src/core/trainer/bundle';
import { MetricsParser, parseMetrics } from '../../src/core/trainer/metrics';
import { RayConnection, compareVersions, parseClusterUrl } from '../../src/core/trainer/connection';
import { RayJobsClient, packagePath } from '../../src/core/trainer/jobs';
import { jobRequest } from '../../src/core/trainer/submit';
import { isSecretName, secretValuesFromEnv } from '../../src/core/trainer/secrets';
import { TbrlError } from '../../src/core/errors';
import { clusterFrom, trainBundleCommand, trainSubmitCommand } from '../../src/cli/commands/train';
import { UsageError } from '../../src/cli/command';
import { loadVector, makeTask, readZipWithPython, scratch, writeGroup } from './trainer-fixtures';

const root = scratch('tbrl-trainer-unit-');
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
const task = makeTask(root);
const vector = loadVector('02-indirect-credit');
const runs = writeGroup(root, vector);

function unzip(zip: Buffer): Record<string, string> {
  const file = join(root, `z-${Math.random().toString(36).slice(2)}.zip`);
  writeFileSync(file, zip);
  return readZipWithPython(file);
}

test('zip: deterministic, readable by Python zipfile, sorted, deflated and stored entries', () => {
  const big = Buffer.from('abc\n'.repeat(5000));
  const a = buildZip([{ path: 'b/x.txt', data: big }, { path: 'a.bin', data: Buffer.from([0, 255, 7]) }]);
  const b = buildZip([{ path: 'a.bin', data: Buffer.from([0, 255, 7]) }, { path: 'b/x.txt', data: big }]);
  assert.deepEqual(a, b, 'entry order does not change the bytes');
  assert.ok(a.length < big.length / 10, 'text is deflated');
  const files = unzip(a);
  assert.deepEqual(Object.keys(files), ['a.bin', 'b/x.txt']);
  assert.equal(files['b/x.txt'], big.toString());
  assert.throws(() => buildZip([{ path: 'x', data: Buffer.from('1') }, { path: 'x', data: Buffer.from('2') }]), /duplicate/);
});

test('bundle: same inputs give the same content-addressed package; manifest hashes every file', async () => {
  const opts = { preset: 'dryrun', algorithm: 'depgpo' as const, taskDirs: [task], trajectories: runs, overrides: ['+tbrl.dryrun.hold_sec=0'] };
  const one = await buildBundle(opts);
  const two = await buildBundle(opts);
  assert.equal(one.sha256, two.sha256);
  assert.equal(one.packageUri, packageUriFor(one.sha256));
  assert.match(one.packageUri, /^gcs:\/\/_ray_pkg_[0-9a-f]{32}\.zip$/);
  const files = unzip(one.zip);
  const manifest = JSON.parse(files['manifest.json']) as { files: Record<string, string>; tasks: Array<{ id: string }>; trajectories: unknown[] };
  assert.deepEqual(Object.keys(manifest.files).sort(), Object.keys(files).filter((f) => f !== 'manifest.json').sort());
  const { createHash } = await import('node:crypto');
  for (const [f, h] of Object.entries(manifest.files)) assert.equal(createHash('sha256').update(files[f], 'utf8').digest('hex'), h, f);
  assert.ok(files['tbrl_bridge/entrypoint.py'] && files['tbrl_bridge/presets.json'], 'the entrypoint package travels');
  assert.ok(files['tasks/trainer-tiny/tests/test.sh'] && files['tasks/trainer-tiny/task.toml'], 'the task directory travels');
  assert.equal(manifest.trajectories.length, 3);
  const other = await buildBundle({ ...opts, algorithm: 'grpo' });
  assert.notEqual(other.sha256, one.sha256, 'a different algorithm is a different package');
});

test('bundle: dataset rows carry data_source, prompt, reward_model and the full task with bundle paths', async () => {
  const b = await buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [] });
  type Row = { data_source: string; prompt: Array<{ role: string; content: string }>; reward_model: unknown; extra_info: { task: string } };
  const rows = unzip(b.zip)['data/train.jsonl'].trim().split('\n').map((l) => JSON.parse(l) as Row);
  assert.equal(rows.length, 1);
  const r = rows[0];
  assert.equal(r.data_source, 'tbrl');
  assert.deepEqual(r.prompt.map((m) => m.role), ['system', 'user']);
  assert.match(r.prompt[1].content, /tbrl-dryrun-probe/);
  assert.deepEqual(r.reward_model, { style: 'rule', ground_truth: 'trainer-tiny' });
  const full = JSON.parse(r.extra_info.task) as { id: string; dir: string; tests: { runner: string }; environment: { image: string } };
  assert.equal(full.id, 'trainer-tiny');
  assert.equal(full.dir, 'tasks/trainer-tiny');
  assert.equal(full.tests.runner, 'tasks/trainer-tiny/tests/test.sh');
  assert.equal(full.environment.image, 'tbrl-standin/python:3');
  assert.ok(!r.extra_info.task.includes(root), 'no path of the submitting machine leaks into the dataset');
});

test('bundle: per-step advantages are DepGPO (f_t/Z · Â_i) or GRPO (Â_i on every step)', async () => {
  const dep = await buildBundle({ preset: 'dryrun', algorithm: 'depgpo', taskDirs: [], trajectories: runs });
  const t1 = dep.advantages.trajectories.find((t) => t.runId === 'run-1')!;
  assert.equal(t1.groupAdvantage, 1);
  assert.deepEqual(t1.steps.map((s) => s.score), vector.expected.stepScores);
  for (const [i, s] of t1.steps.entries()) assert.ok(Math.abs(s.advantage - vector.expected.stepAdvantages[i]) < 1e-12);
  assert.match(t1.path, /^trajectories\/001-run-1\.jsonl$/);
  const grpo = await buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [], trajectories: runs });
  const g2 = grpo.advantages.trajectories.find((t) => t.runId === 'run-2')!;
  assert.equal(g2.groupAdvantage, -1);
  assert.ok(g2.steps.every((s) => s.advantage === -1 && s.factor === 1));
});

test('bundle: bad input is refused with the fix', async () => {
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [], trajectories: [] }), (e: TbrlError) => e.code === 'bundle-empty' && /--tasks/.test(e.message));
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'ppo' as never, taskDirs: [task], trajectories: [] }), (e: TbrlError) => e.code === 'bundle-algorithm');
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task, task], trajectories: [] }), (e: TbrlError) => e.code === 'bundle-duplicate-task');
  assert.throws(() => validateOverrides(['lr 1e-6']), (e: TbrlError) => e.code === 'bundle-override' && /key=value/.test(e.message));
  validateOverrides(['actor_rollout_ref.actor.optim.lr=5e-7', '+env.env_args.timeout=10', "trainer.logger=['console']"]);
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [], maxBytes: 1000 }), (e: TbrlError) => e.code === 'bundle-too-large' && /100 MiB/.test(e.message));
});

test('secrets: a planted key in a trajectory, an override or the job env is refused; the message never quotes it', async () => {
  const secret = 'sk-planted' + 'A'.repeat(30);
  const leakyDir = join(root, 'leaky');
  mkdirSync(leakyDir, { recursive: true });
  writeFileSync(join(leakyDir, 'trajectory.jsonl'), readFileSync(join(runs[0], 'trajectory.jsonl'), 'utf8').replace('python summarize.py', `OPENAI_API_KEY=${secret} python summarize.py`));
  const secrets = secretValuesFromEnv({ OPENAI_API_KEY: secret, HOME: '/root' }, ['tok-123456789']);
  assert.deepEqual(secrets, [secret, 'tok-123456789']);
  const refused = (e: TbrlError) => e.code === 'secret-in-job' && !e.message.includes(secret) && /TBRL_SECRETS_FILE/.test(e.message);
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [], trajectories: [leakyDir], secrets }), (e: TbrlError) => refused(e) && /trajectories\/000-run-0\.jsonl/.test(e.message));
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [], overrides: ['+trainer.wandb_api_key=abc'] }), refused);
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [], env: { HF_TOKEN: 'x' } }), refused);
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [], env: { NOTE: 'tok-123456789' }, secrets }), refused);
  // Shaped like a provider key even when nobody told us it is one.
  await assert.rejects(buildBundle({ preset: 'dryrun', algorithm: 'grpo', taskDirs: [task], trajectories: [], overrides: [`+x.note=hf_${'b'.repeat(30)}`] }), refused);
});

test('job request: deterministic submission id from package, entrypoint, env and tag', async () => {
  const b = await buildBundle({ preset: 'dryrun', algorithm: 'depgpo', taskDirs: [task], trajectories: runs });
  const a = jobRequest(b, { preset: 'dryrun', algorithm: 'depgpo' });
  assert.deepEqual(jobRequest(b, { preset: 'dryrun', algorithm: 'depgpo' }), a);
  assert.match(a.submission_id, /^tbrl-dryrun-[0-9a-f]{16}$/);
  assert.notEqual(jobRequest(b, { preset: 'dryrun', algorithm: 'depgpo', tag: 'again' }).submission_id, a.submission_id, 'a tag makes a deliberate re-run');
  assert.notEqual(jobRequest(b, { preset: 'dryrun', algorithm: 'depgpo', env: { X: '1' } }).submission_id, a.submission_id);
  assert.equal(a.runtime_env.working_dir, b.packageUri);
  assert.equal((a.runtime_env.env_vars as Record<string, string>).TBRL_ALGORITHM, 'depgpo', 'rLLM workers learn the algorithm from the job env');
  assert.equal(a.entrypoint, 'python -m tbrl_bridge.entrypoint --preset dryrun --algorithm depgpo');
  assert.equal(a.metadata.preset, 'dryrun');
});

test('metrics: verl console lines and bridge JSONL become series, across arbitrary chunk splits', () => {
  const log = [
    '(TaskRunner pid=1) step:1 - actor/entropy:0.52 - actor/grad_norm:1.25 - critic/score/mean:0.25 - timing_s/gen:12.3',
    'step:2 - actor/entropy:0.48 - actor/grad_norm:0.9 - critic/score/mean:0.5 - actor/pg_loss:-1.5e-03 - response_length/mean:nan',
    'tbrl-metrics {"step": 0, "depgpo/factor_spread": 1.75, "reward/pass_rate": 0.25}',
    'tbrl-metrics {"event": "env-episode", "reward": 1.0}',
    'tbrl-metrics {"step": 1, "depgpo/factor_spr',
    'noise: step:x - a:b',
    'step:3 - actor/entropy:0.4',
  ].join('\n');
  const whole = parseMetrics(log);
  const p = new MetricsParser();
  for (let i = 0; i < log.length; i += 7) p.push(log.slice(i, i + 7));
  p.end();
  assert.deepEqual(p.series, whole.series, 'chunking does not change the result');
  const c = whole.canonical();
  assert.deepEqual(c.entropy, [{ step: 1, value: 0.52 }, { step: 2, value: 0.48 }, { step: 3, value: 0.4 }]);
  assert.deepEqual(c.gradNorm.map((x) => x.value), [1.25, 0.9]);
  assert.deepEqual(c.rewardMean, [{ step: 1, value: 0.25 }, { step: 2, value: 0.5 }]);
  assert.deepEqual(c.passRate, [{ step: 0, value: 0.25 }]);
  assert.deepEqual(c.depgpoFactorSpread, [{ step: 0, value: 1.75 }]);
  assert.equal(whole.series['actor/pg_loss'][0].value, -0.0015);
  assert.ok(Number.isNaN(whole.series['response_length/mean'][0].value));
  assert.equal(whole.series['timing_s/gen'][0].value, 12.3);
  assert.deepEqual(whole.events, [{ event: 'env-episode', reward: 1 }]);
  // A replayed line (tail reconnect) does not duplicate a point.
  const again = parseMetrics(log + '\nstep:3 - actor/entropy:0.41\n');
  assert.deepEqual(again.canonical().entropy.at(-1), { step: 3, value: 0.41 });
  assert.equal(again.canonical().entropy.length, 3);
});

test('cluster URL and CLI cluster options: bad input named with the fix; token never from a flag value', () => {
  assert.equal(parseClusterUrl('127.0.0.1:8265').href, 'http://127.0.0.1:8265/');
  assert.throws(() => parseClusterUrl('ray://head:10001'), (e: TbrlError) => e.code === 'ray-bad-url' && /client port/.test(e.message));
  assert.throws(() => parseClusterUrl('http://u:p@head:8265'), (e: TbrlError) => /TBRL_RAY_TOKEN/.test(e.message));
  assert.throws(() => parseClusterUrl('http://exa mple'), (e: TbrlError) => e.code === 'ray-bad-url');
  assert.throws(() => clusterFrom({}, {}), /--cluster/);
  assert.throws(() => clusterFrom({ cluster: 'ray://x:1' }, {}), /Jobs API/);
  assert.throws(() => clusterFrom({ cluster: 'http://h:1', header: ['nocolon'] }, {}), /name:value/);
  const tokenFile = join(root, 'token');
  writeFileSync(tokenFile, 'from-file\n');
  assert.deepEqual(clusterFrom({ cluster: 'http://h:1', header: ['X-A: b'] }, { TBRL_RAY_TOKEN: 'from-env' }), { url: 'http://h:1', token: 'from-env', headers: { 'x-a': 'b' } });
  assert.equal(clusterFrom({ cluster: 'http://h:1', 'token-file': tokenFile }, { TBRL_RAY_TOKEN: 'from-env' }).token, 'from-file');
  assert.equal(clusterFrom({}, { TBRL_RAY_ADDRESS: 'http://a:2' }).url, 'http://a:2');
  assert.ok(compareVersions('2.60.0', '2.9.0') > 0 && compareVersions('2.8.1', '2.9.0') < 0 && compareVersions('2.9.0', '2.9') === 0);
  assert.equal(packagePath('gcs://_ray_pkg_abc123.zip'), '/api/packages/gcs/_ray_pkg_abc123.zip');
  assert.throws(() => packagePath('gcs://../../etc.zip'), (e: TbrlError) => e.code === 'ray-package-uri');
});

// An old Ray cannot be installed offline next to the pinned one, so its /api/version answer is
// served by a plain HTTP server; the check under test is ours.
test('connection: a Ray older than the minimum, a non-Ray server and a proxy that wants auth get clear errors', async () => {
  let answer: { status: number; body: string } = { status: 200, body: '{"version":"3","ray_version":"2.3.1"}' };
  const seen: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    seen.push({ ...req.headers });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(answer.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const conn = new RayConnection({ url, token: 'tok', headers: { 'x-proxy': 'p' } });
    await assert.rejects(conn.checkVersion(), (e: TbrlError) => e.code === 'ray-too-old' && /2\.3\.1/.test(e.message) && /pip install -U/.test(e.message));
    assert.equal(seen[0].authorization, 'Bearer tok');
    assert.equal(seen[0]['x-proxy'], 'p');
    answer = { status: 404, body: 'not found' };
    await assert.rejects(conn.checkVersion(), (e: TbrlError) => e.code === 'ray-too-old' && /8265/.test(e.message));
    answer = { status: 200, body: '<html>login</html>' };
    await assert.rejects(conn.checkVersion(), (e: TbrlError) => e.code === 'ray-not-ray' && /proxy login page/.test(e.message));
    answer = { status: 401, body: 'no' };
    await assert.rejects(new RayConnection({ url }).checkVersion(), (e: TbrlError) => e.code === 'ray-unauthorized' && /export TBRL_RAY_TOKEN/.test(e.message));
    answer = { status: 403, body: 'forbidden' };
    await assert.rejects(conn.checkVersion(), (e: TbrlError) => e.code === 'ray-forbidden' && /was rejected/.test(e.message) && !e.message.includes('tok '));
    answer = { status: 500, body: 'Traceback (most recent call last):\n  File "x"\nValueError: boom' };
    await assert.rejects(new RayJobsClient(conn).list(), (e: TbrlError) => e.code === 'ray-http' && /ValueError: boom/.test(e.message) && /dashboard\.log/.test(e.message));
    // Two Rays on one machine: the second head's dashboard agent could not bind its port.
    // Ray 2.60's job_head.submit_job answers exactly this when no agent answered in time.
    answer = { status: 500, body: 'No available agent to submit job, please try again later.' };
    await assert.rejects(new RayJobsClient(conn).list(), (e: TbrlError) => e.code === 'ray-no-agent' && /dashboard agent is not running/.test(e.message) && /52365/.test(e.message) && /own ports for every component/.test(e.fix ?? '') && !/internal error/.test(e.fix ?? ''));
    answer = { status: 413, body: 'Request Entity Too Large' };
    await assert.rejects(new RayJobsClient(conn).uploadPackage('gcs://_ray_pkg_ab12.zip', Buffer.alloc(2 * 1048576)), (e: TbrlError) => e.code === 'ray-package-too-large' && /2\.0 MiB/.test(e.message) && /proxy/.test(e.message));
  } finally {
    server.close();
  }
});

test('CLI: a shell glob after --tasks is refused instead of silently dropping tasks', async () => {
  for (const cmd of [trainSubmitCommand, trainBundleCommand]) {
    await assert.rejects(cmd.run({ positionals: ['tasks/b', 'tasks/c'], values: { preset: 'dryrun', tasks: ['tasks/a'], cluster: 'http://127.0.0.1:1', out: '/dev/null' } }), (e: Error) => e instanceof UsageError && /--tasks a,b/.test(e.message));
  }
  await assert.rejects(trainBundleCommand.run({ positionals: [], values: { preset: 'dryrun', algorithm: 'ppo', out: '/dev/null' } }), /grpo or depgpo/);
});

test('secret names: whole segments, so tokenizer settings and token limits are not mistaken for secrets', () => {
  for (const n of ['OPENAI_API_KEY', 'WANDB_API_KEY', 'HF_TOKEN', 'GITHUB_TOKEN', 'TBRL_RAY_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'DB_PASSWORD', 'trainer.wandb_api_key', 'auth', 'X_AUTH', 'GOOGLE_APPLICATION_CREDENTIALS', 'apikey', 'hfToken']) {
    assert.ok(isSecretName(n), n);
  }
  for (const n of ['TOKENIZERS_PARALLELISM', 'actor_rollout_ref.rollout.max_tokens', 'GIT_AUTHOR_NAME', 'max_new_tokens', 'PATH', 'KEYBOARD', 'data.max_prompt_length', 'author']) {
    assert.ok(!isSecretName(n), n);
  }
});

test('log tail stopped by its caller: the job\'s status is read only when asked for (statusOnAbort: false reads none)', async () => {
  // A dashboard stand-in: the job's log socket sends one frame and stays open (the job runs on).
  let statusReads = 0;
  const server = createServer((req, res) => {
    if (req.url === '/api/jobs/j1') {
      statusReads++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ submission_id: 'j1', status: 'RUNNING' }));
      return;
    }
    res.writeHead(404);
    res.end();
  });
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (req.url !== '/api/jobs/j1/logs/tail') return socket.destroy();
    sockets.handleUpgrade(req, socket, head, (ws: WebSocket) => ws.send('line one\n'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const client = new RayJobsClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    const stopAtFirstText = (): { signal: AbortSignal; onText: (text: string) => void; texts: string[] } => {
      const stop = new AbortController();
      const texts: string[] = [];
      return { signal: stop.signal, texts, onText: (text) => { texts.push(text); stop.abort(); } };
    };
    const quiet = stopAtFirstText();
    assert.equal(await client.tail('j1', quiet.onText, { signal: quiet.signal, statusOnAbort: false }), undefined);
    assert.deepEqual([quiet.texts, statusReads], [['line one\n'], 0]);
    const asking = stopAtFirstText();
    assert.equal((await client.tail('j1', asking.onText, { signal: asking.signal })).status, 'RUNNING');
    assert.deepEqual([asking.texts, statusReads], [['line one\n'], 1]);
  } finally {
    for (const ws of sockets.clients) ws.terminate();
    sockets.close();
    server.close();
  }
});
