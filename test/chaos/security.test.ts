/**
 * Security: what the agent's container can reach (Docker socket, host mounts, network), whether
 * file primitives can write outside the container, and whether a planted API key ever reaches a
 * trajectory, report, log line or the container.
 */
import { runTaskOk } from '../helpers/run';
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { inflateRawSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { createDockerProvider, type Sandbox, type SandboxProvider } from '../../src/core/sandbox/index';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { buildBundle } from '../../src/core/trainer/bundle';
import { jobRequest } from '../../src/core/trainer/submit';
import { secretValuesFromEnv } from '../../src/core/trainer/secrets';
import { TbrlError } from '../../src/core/errors';
import { startOpenAIServer } from '../helpers/openai-server';
import { chaosCase, recordRunId } from './helpers/chaos';

const EXAMPLE = resolve('examples/hello-world');
const CLI = resolve('src/cli/main.ts');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-sec-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const provider = createDockerProvider();
const docker = provider.docker;

/** Records the sandboxes runTask creates so the test can inspect the live container. */
function recordingProvider(created: Sandbox[]): SandboxProvider {
  return {
    create: async (spec) => { const sb = await provider.create(spec); created.push(sb); return sb; },
    fork: (cp, spec) => provider.fork(cp, spec),
    gc: (o) => provider.gc(o),
    removeCheckpoint: (cp) => provider.removeCheckpoint(cp),
  };
}

const bash = (cmd: string) => `<bash>\ncmd: |\n${cmd.split('\n').map((l) => `  ${l}`).join('\n')}\n</bash>`;
const CONNECT = `python3 - <<'PY'
import socket
for host, port in [("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 2375), ("172.17.0.1", 22)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print(host, port, "CONNECTED")
    except OSError as e:
        print(host, port, "refused:", e.strerror or e)
    finally:
        s.close()
PY`;

chaosCase('agent container of examples/hello-world with allow_internet: false (via runTask): Docker socket, mounts, privileges, network; connect to 1.1.1.1, 8.8.8.8, the host bridge', 'no socket, no host mounts (task declares none), not privileged, NetworkMode none, every connect fails; the same task without the key (formats default to internet on) gets bridge', async () => {
  const created: Sandbox[] = [];
  // Terminal-Bench and Harbor default allow_internet to true, so the example as shipped has a network.
  const offline = join(scratch, 'hello-offline');
  cpSync(EXAMPLE, offline, { recursive: true });
  appendFileSync(join(offline, 'task.yaml'), '\nallow_internet: false\n');
  const marker = `chaos-escape-${process.pid}-${randomBytes(3).toString('hex')}`;
  const policy = new ScriptedPolicy([
    bash('ls -la /var/run/docker.sock /run/docker.sock 2>&1; echo "sock-exit=$?"; awk \'{print $2}\' /proc/mounts | sort | tr "\\n" " "'),
    bash(CONNECT),
    `<file>\naction: write\nfile_path: ../../../../../../tmp/${marker}/x\ncontent: inside\n</file>`,
    bash(`cat /tmp/${marker}/x`),
  ]);
  let inspected: Awaited<ReturnType<ReturnType<typeof docker.getContainer>['inspect']>> | undefined;
  const result = await runTaskOk({
    taskDir: offline, outDir: join(scratch, 'sec-run'), policyOverride: policy, sandboxProvider: recordingProvider(created), trace: false, skipReward: true, env: {},
    beforeExecute: async (step) => {
      if (step === 0) inspected = await docker.getContainer(created[0].info.containerId).inspect();
      return { action: 'continue' };
    },
  });
  recordRunId(result.runId);
  assert.ok(inspected, 'container not inspected');
  const hc = inspected.HostConfig;
  assert.equal(hc.NetworkMode, 'none');
  assert.equal(hc.Privileged, false);
  assert.ok(!hc.CapAdd || hc.CapAdd.length === 0, `CapAdd ${hc.CapAdd}`);
  assert.deepEqual(hc.Binds ?? [], []);
  // Only the studio's own programs are mounted, read-only from named volumes: the command cage and
  // the strace bundle (sandbox/cage.ts, sandbox/strace-volume.ts). Nothing of the host.
  const studioMounts: Record<string, RegExp> = { '/.tbrl-cage': /^tbrl-cage-[0-9a-f]+$/, '/.tbrl-strace': /^tbrl-strace-[0-9a-f]+$/ };
  for (const m of inspected.Mounts) {
    assert.equal(m.Type, 'volume', JSON.stringify(m));
    assert.equal(m.RW, false, JSON.stringify(m));
    assert.match(m.Name ?? '', studioMounts[m.Destination] ?? /^$/, JSON.stringify(m));
  }
  assert.ok(inspected.Mounts.some((m) => m.Destination === '/.tbrl-cage'), 'the command cage is mounted');
  assert.deepEqual(hc.SecurityOpt, ['no-new-privileges']);
  const obs = result.steps.map((s) => s.actions[0]?.observation ?? '');
  assert.match(obs[0], /No such file or directory[\s\S]*sock-exit=2/);
  assert.doesNotMatch(obs[0], /docker\.sock\s/);
  assert.doesNotMatch(obs[1], /CONNECTED/);
  assert.equal((obs[1].match(/refused:/g) ?? []).length, 4, obs[1]);
  assert.match(obs[3], /inside/);
  assert.equal(existsSync(`/tmp/${marker}`), false, 'the file action wrote on the host');
  // Contrast: the example as shipped (no allow_internet key) gets a bridge network.
  const createdOnline: Sandbox[] = [];
  let mode = '';
  const online = await runTaskOk({
    taskDir: EXAMPLE, outDir: join(scratch, 'sec-run-online'), policyOverride: new ScriptedPolicy([bash('true')]), sandboxProvider: recordingProvider(createdOnline), trace: false, skipReward: true, env: {},
    beforeExecute: async () => {
      mode = (await docker.getContainer(createdOnline[0].info.containerId).inspect()).HostConfig.NetworkMode ?? '';
      return { action: 'continue' };
    },
  });
  recordRunId(online.runId);
  assert.equal(mode, 'bridge');
  return `NetworkMode none, Binds [], Mounts only the studio's read-only volumes (${inspected.Mounts.map((m) => m.Destination).join(', ')}), not privileged, no-new-privileges; socket: "${obs[0].split('\n').find((l) => /docker\.sock/.test(l))?.trim().slice(0, 70)}"; connects: ${obs[1].trim().split('\n').filter((l) => !l.startsWith('<')).map((l) => l.replace(/refused: /, '')).join(' / ')}; ../ write landed in the container; example as shipped (internet by format default) → ${mode}`;
}, { timeout: 120_000 });

chaosCase('file primitives: writeFile with ../ and /../ paths, putArchive with ../ entries, an absolute-path entry and a symlink to /tmp, readFile("../../etc/hostname")', 'everything lands in (or reads from) the container; nothing appears on the host', async () => {
  const runId = `chaos-files-${process.pid}`;
  recordRunId(runId);
  const tag = `chaos-trav-${process.pid}-${randomBytes(3).toString('hex')}`;
  const hostPaths = [`/tmp/${tag}-a`, `/tmp/${tag}-b`, `/tmp/${tag}-c`, `/tmp/${tag}-d`, `/tmp/${tag}-link`, `/tmp/${tag}-viaLink`];
  const sb = await provider.create({ image: { kind: 'image', image: 'debian:bookworm-slim' }, runId });
  const tarOf = async (entries: Array<{ name: string; type?: 'file' | 'symlink'; linkname?: string; body?: string }>): Promise<Buffer> => {
    const tar = pack();
    for (const e of entries) {
      if (e.type === 'symlink') tar.entry({ name: e.name, type: 'symlink', linkname: e.linkname });
      else tar.entry({ name: e.name }, e.body ?? e.name);
    }
    tar.finalize();
    const chunks: Buffer[] = [];
    for await (const c of tar) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const outcome: string[] = [];
  try {
    await sb.exec('mkdir -p /work/deep/er && cd /work/deep/er');
    await sb.writeFile(`../../../../../../tmp/${tag}-a`, 'A');
    await sb.writeFile(`/../../../tmp/${tag}-b`, 'B');
    // Each archive separately: Docker refuses a whole archive at the first bad entry.
    for (const [label, entries] of [
      ['../ entry', [{ name: `../../../../tmp/${tag}-c` }]],
      ['absolute entry', [{ name: `/tmp/${tag}-d` }]],
      ['symlink to /tmp', [{ name: `${tag}-link`, type: 'symlink' as const, linkname: '/tmp' }]],
      ['file through that symlink', [{ name: `${tag}-link/${tag}-viaLink` }]],
    ] as const) {
      await sb.putArchive(await tarOf([...entries]), '/work/deep').then(
        () => outcome.push(`${label}: accepted`),
        (err: Error) => outcome.push(`${label}: refused (${err.constructor.name}: ${err.message.split('\n')[0].replace(/.*server error - /, '').slice(0, 70)})`),
      );
    }
    await sb.writeFile(`/work/deep/${tag}-link/${tag}-viaWriteFile`, 'L').then(() => outcome.push('writeFile through the symlink: accepted'), (err: Error) => outcome.push(`writeFile through the symlink: refused (${err.message.slice(0, 60)})`));
    const found = (await sb.exec(`find / -xdev -name '${tag}*' 2>/dev/null | sort`)).output.trim().split('\n').filter(Boolean);
    const hostname = (await sb.readFile('../../../../etc/hostname')).toString().trim();
    assert.equal(hostname, sb.info.containerId.slice(0, 12), 'readFile read the host\'s /etc/hostname');
    assert.ok(found.includes(`/tmp/${tag}-a`) && found.includes(`/tmp/${tag}-b`), `writeFile results: ${found.join(', ')}`);
    const onHost = [...hostPaths, `/tmp/${tag}-viaWriteFile`].filter((p) => existsSync(p));
    assert.deepEqual(onHost, [], 'written on the host');
    return `${outcome.join('; ')}; found inside the container: ${found.map((f) => f.replace(tag, '<tag>')).join(', ')}; readFile ../ → container hostname; host: 0 files`;
  } finally {
    await sb.close();
    for (const p of [...hostPaths, `/tmp/${tag}-viaWriteFile`]) rmSync(p, { recursive: true, force: true });
  }
}, { timeout: 90_000 });

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

function runCli(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    // --import resolves from the child's cwd, which is outside the repository here.
    const child = spawn(process.execPath, ['--import', pathToFileURL(resolve('node_modules/tsx/dist/loader.mjs')).href, CLI, ...args], { cwd, env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => res({ code, out }));
  });
}

chaosCase('planted API keys (one in .tbrl/config.json, one in OPENAI_API_KEY) through `tbrl run` model-policy runs; the agent dumps its env; a second run with a rejected key', 'neither key in any written file, stdout/stderr or the container env; the key is sent only as the Authorization header', async () => {
  const fileKey = `sk-chaosfile${randomBytes(12).toString('hex')}`;
  const envKey = `sk-chaosenv${randomBytes(12).toString('hex')}`;
  const srv = await startOpenAIServer({ models: ['m'], apiKey: fileKey });
  srv.enqueue(bash('env | sort; tr "\\0" "\\n" < /proc/1/environ; cat ~/.tbrl/config.json /root/.tbrl/config.json 2>&1 | head -3'), '<finish>\nmessage: done\n</finish>');
  const cwd = join(scratch, 'secret-cwd');
  mkdirSync(join(cwd, '.tbrl'), { recursive: true });
  writeFileSync(join(cwd, '.tbrl', 'config.json'), JSON.stringify({ baseUrl: srv.baseUrl, model: 'm', apiKey: fileKey }));
  try {
    const ok = await runCli(['run', EXAMPLE, '--no-trace', '--judge', 'm'], cwd, { TBRL_SECRET_CANARY_UNUSED: '1' });
    // A rejected key: the 401 path must not echo it either.
    const bad = await runCli(['run', EXAMPLE, '--no-trace', '--out', join(cwd, 'runs', 'rejected')], cwd, { OPENAI_API_KEY: envKey });
    assert.ok(srv.requests.some((r) => r.authorization === `Bearer ${fileKey}`), 'the file key was never used');
    assert.ok(srv.requests.some((r) => r.authorization === `Bearer ${envKey}`), 'the env key was never used');
    assert.notEqual(bad.code, 0);
    assert.match(bad.out, /rejected the API key/);
    const files = walk(join(cwd, 'runs'));
    assert.ok(files.length >= 4, files.join(', '));
    for (const f of files) {
      const t = readFileSync(f, 'utf8');
      assert.ok(!t.includes(fileKey) && !t.includes(envKey), `${f} holds a planted key`);
      if (f.endsWith('trajectory.jsonl')) recordRunId(JSON.parse(t.split('\n')[0]).runId);
    }
    for (const [name, out] of [['run', ok.out], ['rejected run', bad.out]]) assert.ok(!out.includes(fileKey) && !out.includes(envKey), `${name} output holds a planted key`);
    const traj = await readTrajectory(files.find((f) => /trajectory\.jsonl$/.test(f) && !f.includes('rejected'))!);
    const envDump = traj.steps[0].actions[0].observation;
    assert.match(envDump, /PATH=/, 'the env dump did not run');
    assert.doesNotMatch(envDump, /OPENAI|sk-chaos/);
    const labelled = await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${traj.header.runId}`] } });
    assert.equal(labelled.length, 0);
    return `${files.length} files (trajectories, reports) + stdout/stderr of 2 runs scanned: 0 hits; container env dump has no key; rejected run says "rejected the API key" without it; ${srv.requests.length} requests carried it only as Bearer`;
  } finally {
    await srv.close();
  }
}, { timeout: 180_000 });

/** Entries of a zip written by src/core/trainer/zip.ts (local headers, stored or deflated, no data descriptors). */
function unzip(zip: Buffer): Array<{ path: string; data: Buffer }> {
  const out: Array<{ path: string; data: Buffer }> = [];
  let at = 0;
  while (zip.readUInt32LE(at) === 0x04034b50) {
    const method = zip.readUInt16LE(at + 8);
    const size = zip.readUInt32LE(at + 18);
    const nameLen = zip.readUInt16LE(at + 26);
    const extraLen = zip.readUInt16LE(at + 28);
    const path = zip.subarray(at + 30, at + 30 + nameLen).toString('utf8');
    const body = zip.subarray(at + 30 + nameLen + extraLen, at + 30 + nameLen + extraLen + size);
    out.push({ path, data: method === 8 ? inflateRawSync(body) : Buffer.from(body) });
    at += 30 + nameLen + extraLen + size;
  }
  return out;
}

chaosCase('trainer: planted key in the local env, in --env, and leaked into a trajectory observation; then a clean bundle + Ray job request scanned', 'secret-named env and a leaked value are refused (secret-in-job, value never quoted); the clean bundle, runtime_env and metadata hold no key', async () => {
  const key = `sk-chaosray${randomBytes(12).toString('hex')}`;
  const secrets = secretValuesFromEnv({ OPENAI_API_KEY: key, HOME: '/root' });
  assert.deepEqual(secrets, [key]);
  // A clean trajectory of the example task (scripted, no reward needed).
  const clean = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'bundle-run'), policyOverride: new ScriptedPolicy([bash('ls /app')]), trace: false, skipReward: true, env: {} });
  recordRunId(clean.runId);
  const base = { preset: 'dryrun', algorithm: 'grpo' as const, taskDirs: [EXAMPLE], secrets };
  const refused: string[] = [];
  const expectRefusal = async (what: string, p: Promise<unknown>) => {
    await assert.rejects(p, (err: unknown) => {
      assert.ok(err instanceof TbrlError, String(err));
      assert.equal(err.code, 'secret-in-job');
      assert.ok(!err.message.includes(key) && !(err.fix ?? '').includes(key), 'the refusal quotes the secret');
      refused.push(what);
      return true;
    });
  };
  await expectRefusal('--env OPENAI_API_KEY', buildBundle({ ...base, trajectories: [clean.trajectoryPath], env: { OPENAI_API_KEY: key } }));
  await expectRefusal('--env NOTE=<key value>', buildBundle({ ...base, trajectories: [clean.trajectoryPath], env: { NOTE: key } }));
  await expectRefusal('--override with the key', buildBundle({ ...base, trajectories: [clean.trajectoryPath], overrides: [`trainer.logger_token=${key}`] }));
  const leakedPath = join(scratch, 'leaked.jsonl');
  writeFileSync(leakedPath, readFileSync(clean.trajectoryPath, 'utf8').replace('"observation":"', `"observation":"OPENAI_API_KEY=${key}\\n`));
  await expectRefusal('trajectory with the key in an observation', buildBundle({ ...base, trajectories: [leakedPath] }));

  const bundle = await buildBundle({ ...base, trajectories: [clean.trajectoryPath], env: { TBRL_NOTE: 'chaos' } });
  const request = jobRequest(bundle, { preset: 'dryrun', algorithm: 'grpo', env: { TBRL_NOTE: 'chaos' } });
  const entries = unzip(bundle.zip);
  assert.ok(entries.some((e) => e.path.startsWith('trajectories/')) && entries.length > 10, entries.map((e) => e.path).join(', '));
  const hits = entries.filter((e) => e.data.includes(key)).map((e) => e.path);
  assert.deepEqual(hits, []);
  const requestText = JSON.stringify(request);
  assert.ok(!requestText.includes(key), 'the job request holds the key');
  assert.ok(!/sk-[A-Za-z0-9]{16}/.test(requestText));
  return `refused: ${refused.join('; ')}; clean bundle ${entries.length} files (${(bundle.zip.length / 1024).toFixed(0)} KiB) + job request (runtime_env ${Object.keys(request.runtime_env).join('/')}, metadata ${Object.keys(request.metadata).length} keys): 0 hits`;
}, { timeout: 120_000 });
