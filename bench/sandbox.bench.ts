// Sandbox latency benchmark: a trivial command through the persistent shell vs `docker exec` from
// the CLI vs one dockerode exec per command, measured in the same run on the same container; cold
// start to a ready shell; and 8 sandboxes × 100 commands in parallel.
// Run: node --import tsx bench/sandbox.bench.ts   (prints markdown rows for the README)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Duplex } from 'node:stream';
import { createDockerProvider, type Sandbox } from '../src/core/sandbox/index';

const run = promisify(execFile);
const IMAGE = process.env.TBRL_BENCH_IMAGE ?? 'debian:bookworm-slim';
const provider = createDockerProvider();
const runId = `bench-sandbox-${process.pid}`;

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function timeEach(n: number, fn: () => Promise<void>, warmup = 3): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

async function dockerodeExecOnce(containerId: string): Promise<void> {
  const exec = await provider.docker.getContainer(containerId).exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
  const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
  stream.resume();
  await new Promise<void>((resolve) => stream.on('end', resolve).on('close', resolve));
  const info = await exec.inspect();
  if (info.ExitCode !== 0) throw new Error(`dockerode exec exit ${info.ExitCode}`);
}

async function main(): Promise<void> {
  const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(0));
  const rows: string[] = [];
  const sb = await provider.create({ image: { kind: 'image', image: IMAGE }, runId });
  try {
    const shell = await timeEach(500, async () => {
      const r = await sb.exec('true');
      if (r.exitCode !== 0) throw new Error('persistent shell: true failed');
    });
    const cli = await timeEach(20, async () => {
      await run('docker', ['exec', sb.info.containerId, 'true']);
    });
    const api = await timeEach(30, () => dockerodeExecOnce(sb.info.containerId));
    const p50 = { shell: pct(shell, 50), cli: pct(cli, 50), api: pct(api, 50) };
    rows.push(`| \`true\` round trip, persistent shell | ${fmt(p50.shell)} ms | ${fmt(pct(shell, 95))} ms | 1x |`);
    rows.push(`| \`true\` round trip, dockerode exec per command | ${fmt(p50.api)} ms | ${fmt(pct(api, 95))} ms | ${(p50.api / p50.shell).toFixed(0)}x slower |`);
    rows.push(`| \`true\` round trip, \`docker exec\` CLI | ${fmt(p50.cli)} ms | ${fmt(pct(cli, 95))} ms | ${(p50.cli / p50.shell).toFixed(0)}x slower (target ≥ 20x) |`);
  } finally {
    await sb.close();
  }

  const cold: number[] = [];
  for (let i = 0; i < 8; i++) {
    const t = process.hrtime.bigint();
    const s = await provider.create({ image: { kind: 'image', image: IMAGE }, runId });
    cold.push(Number(process.hrtime.bigint() - t) / 1e6);
    await s.close();
  }
  rows.push(`| cold start: create + start + shell ready | ${fmt(pct(cold, 50))} ms | ${fmt(pct(cold, 95))} ms | target < 1000 ms |`);

  const t0 = Date.now();
  const sandboxes: Sandbox[] = await Promise.all(Array.from({ length: 8 }, () => provider.create({ image: { kind: 'image', image: IMAGE }, runId })));
  let failures = 0;
  let commands = 0;
  try {
    await Promise.all(
      sandboxes.map(async (s, k) => {
        for (let i = 0; i < 100; i++) {
          const r = await s.exec(`echo ${k}-${i}; cd /tmp`);
          commands++;
          if (r.exitCode !== 0 || r.output !== `${k}-${i}\n`) failures++;
        }
      }),
    );
  } finally {
    await Promise.all(sandboxes.map((s) => s.close()));
  }
  rows.push(`| 8 sandboxes in parallel × 100 commands | ${commands} commands, ${failures} failures | ${((Date.now() - t0) / 1000).toFixed(1)} s incl. start/stop | 2 cores |`);

  console.log('| Sandbox benchmark | p50 | p95 | vs persistent shell |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(r);
  if (failures > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
