/**
 * Whole-process-tree CPU of the full host gates: another checkout's code (default /work/main) against
 * this one, in one process, alternated task by task, one task at a time (issue #20).
 *
 *   node --import tsx bench/synth-ab.bench.ts [--baseline-root /work/main] [--count 7] [--seed-base 1] [--rounds 1] [--probe-concurrency 2]
 *
 * Each checkout's own `synthesize` and `runGates` are imported (so each task ships that checkout's
 * programs) and each starts its own gate server. The CPU of a task's gates is that of this process and
 * everything it started (the gate servers and spawners are its children and reap every program they
 * start): utime + stime + cutime + cstime from /proc, so other load on the machine is not counted.
 * Gate verdicts, reference Φ, per-probe verdicts and Φ and gate details must be identical.
 */
import { parseArgs } from 'node:util';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = parseArgs({ options: { 'baseline-root': { type: 'string' }, count: { type: 'string' }, 'seed-base': { type: 'string' }, rounds: { type: 'string' }, 'probe-concurrency': { type: 'string' } } });
const BASELINE_ROOT = resolve(values['baseline-root'] ?? '/work/main');
const COUNT = Number(values.count ?? 7);
const SEED_BASE = Number(values['seed-base'] ?? 1);
const ROUNDS = Math.max(1, Number(values.rounds ?? 1));
const PROBE_CONCURRENCY = Math.max(1, Number(values['probe-concurrency'] ?? 2));

interface Side { synthesize: (o: { domain: string; tier: 'small'; seed: number }) => unknown; runGates: (t: unknown, o?: Record<string, unknown>) => Promise<{ passed: boolean; referencePhi: number[]; probes: unknown[]; gates: { name: string; passed: boolean; detail: string }[] }>; closeGatePythons: () => Promise<void>; domains: string[] }

async function load(root: string): Promise<Side> {
  const gen = await import(pathToFileURL(join(root, 'src/core/synth/generate.ts')).href);
  const gates = await import(pathToFileURL(join(root, 'src/core/synth/gates.ts')).href);
  const dom = await import(pathToFileURL(join(root, 'src/core/synth/domains.ts')).href);
  return { synthesize: gen.synthesize, runGates: gates.runGates, closeGatePythons: gates.closeGatePythons, domains: Object.keys(dom.DOMAINS) };
}

/** CPU ms of this process and its descendants (finished ones included, once reaped by their parent). */
function treeCpuMs(): number {
  const ticks = (pid: string): number => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
      return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    } catch {
      return 0;
    }
  };
  let total = ticks(String(process.pid));
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    let children = '';
    try { children = readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8'); } catch { /* gone */ }
    for (const child of children.split(' ').filter(Boolean)) total += ticks(child);
  }
  return total * 10;
}

const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
const loadAvg = () => loadavg().map((x) => x.toFixed(1)).join(' ');

void (async () => {
  const sides = { baseline: await load(BASELINE_ROOT), current: await load(resolve(__dirname, '..')) };
  const domains = sides.current.domains;
  // Warm both servers (and compile their clients) before measuring.
  const warmTask = { domain: domains[0], tier: 'small' as const, seed: 999 };
  for (const side of Object.values(sides)) await side.runGates(side.synthesize(warmTask), { probes: false });
  console.log(`baseline ${BASELINE_ROOT} vs current ${resolve(__dirname, '..')}; ${COUNT} task(s) x ${ROUNDS} round(s); load average ${loadAvg()}`);
  const sum = { baseline: 0, current: 0 };
  const wall = { baseline: 0, current: 0 };
  let same = 0, n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < COUNT; k++) {
      const spec = { domain: domains[k % domains.length], tier: 'small' as const, seed: SEED_BASE + k };
      const order = (n % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline']) as (keyof typeof sides)[];
      const out: Record<string, string> = {};
      const cpu: Record<string, number> = {};
      for (const name of order) {
        const side = sides[name];
        const task = side.synthesize(spec);
        const c0 = treeCpuMs();
        const w0 = Date.now();
        const r = await side.runGates(task, { concurrency: PROBE_CONCURRENCY });
        wall[name] += Date.now() - w0;
        cpu[name] = treeCpuMs() - c0;
        sum[name] += cpu[name];
        out[name] = JSON.stringify({ passed: r.passed, phi: r.referencePhi, probes: r.probes, gates: r.gates.map((g) => [g.name, g.passed, g.detail]) });
      }
      n++;
      if (out.baseline === out.current) same++;
      else console.log(`  DIFFERENT ${spec.domain} seed ${spec.seed}:\n    baseline ${out.baseline}\n    current  ${out.current}`);
      console.log(`  ${spec.domain} seed ${spec.seed}: CPU baseline ${s(cpu.baseline)}, current ${s(cpu.current)} (${(cpu.baseline / Math.max(1, cpu.current)).toFixed(2)}x); load ${loadAvg()}`);
    }
  }
  console.log(`CPU of the whole process tree per task: baseline ${s(sum.baseline / Math.max(1, n))} vs current ${s(sum.current / Math.max(1, n))}, ${(sum.baseline / Math.max(1, sum.current)).toFixed(3)}x; wall ${s(wall.baseline / Math.max(1, n))} vs ${s(wall.current / Math.max(1, n))}; identical results ${same}/${n}; load average ${loadAvg()}`);
  for (const side of Object.values(sides)) await side.closeGatePythons();
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
