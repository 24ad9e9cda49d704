// The cost of the cage (#14): a trivial command's round trip through the frame shell whose commands
// are caged by the studio's static helper (and whose frame shell is the static bash) vs the same
// with the image's setpriv and bash (TBRL_CAGE=off, the previous mode), alternated in one run on the
// same image, so load hits both alike.
// Run: node --import tsx bench/cage.bench.ts   (prints markdown rows for the README)
import { createDockerProvider, type Sandbox } from '../src/core/sandbox/index';

const IMAGE = process.env.TBRL_BENCH_IMAGE ?? 'debian:bookworm-slim';
const ROUNDS = Number(process.env.TBRL_BENCH_ROUNDS ?? 300);
const provider = createDockerProvider();
const runId = `bench-cage-${process.pid}`;

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function once(sb: Sandbox): Promise<number> {
  const t = process.hrtime.bigint();
  const r = await sb.exec('true');
  if (r.exitCode !== 0) throw new Error(`true failed: ${r.output}`);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

async function main(): Promise<void> {
  const helper = await provider.create({ image: { kind: 'image', image: IMAGE }, runId });
  process.env.TBRL_CAGE = 'off';
  const setpriv = await provider.create({ image: { kind: 'image', image: IMAGE }, runId });
  delete process.env.TBRL_CAGE;
  try {
    if (helper.info.cage?.by !== 'helper' || setpriv.info.cage?.by !== 'setpriv') throw new Error(`unexpected modes: ${helper.info.cage?.by}, ${setpriv.info.cage?.by}`);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 10; i++) { await once(helper); await once(setpriv); }
    for (let i = 0; i < ROUNDS; i++) {
      a.push(await once(helper));
      b.push(await once(setpriv));
    }
    const fmt = (ms: number) => ms.toFixed(1);
    console.log('| Frame shell, `true` round trip | p50 | p95 | vs image setpriv |');
    console.log('|---|---|---|---|');
    console.log(`| caged by the studio's helper, static bash frame shell | ${fmt(pct(a, 50))} ms | ${fmt(pct(a, 95))} ms | ${(pct(a, 50) / pct(b, 50)).toFixed(2)}x |`);
    console.log(`| caged by the image's setpriv (TBRL_CAGE=off, the previous mode) | ${fmt(pct(b, 50))} ms | ${fmt(pct(b, 95))} ms | 1x |`);
  } finally {
    await helper.close();
    await setpriv.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
