/**
 * What an idle local Ray cluster (the eval bench's: head + 2 workers, test/helpers/ray-cluster.ts) costs
 * in CPU per second, per process kind: `node --import tsx bench/ray-idle.ts [--idle 60] [--settle 15]`.
 * Uses TBRL_EVAL_RAY_BASE_PORT (default 46000). Run under `flock /work/bench.lock`.
 */
import { readFileSync } from 'node:fs';
import { processStats, startLocalRayCluster } from '../test/helpers/ray-cluster';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

/** utime+stime of every process under the starters (each tagged with its node), by pid. */
function snapshot(roots: Array<{ name: string; pid: number }>): Map<number, { kind: string; cpu: number }> {
  const stats = processStats();
  const out = new Map<number, { kind: string; cpu: number }>();
  for (const root of roots) {
    const stack = [root.pid];
    while (stack.length) {
      const pid = stack.pop()!;
      const s = stats.get(pid);
      if (!s || out.has(pid)) continue;
      let cmd = '';
      try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '); } catch { /* gone */ }
      out.set(pid, { kind: pid === root.pid ? `ray start (${root.name})` : kindOf(cmd, root.name), cpu: s.cpu });
      for (const [c, x] of stats) if (x.ppid === pid) stack.push(c);
    }
  }
  return out;
}

function kindOf(cmd: string, node: string): string {
  if (/\/raylet\b/.test(cmd.split(' ')[0])) return `raylet (${node})`;
  if (/gcs_server/.test(cmd.split(' ')[0])) return 'gcs_server';
  if (/ray::DashboardAgent|dashboard\/agent\.py/.test(cmd)) return `dashboard agent (${node})`;
  if (/ray::RuntimeEnvAgent|runtime_env\/agent|runtime_env_agent/.test(cmd)) return `runtime-env agent (${node})`;
  if (/dashboard\/dashboard\.py/.test(cmd)) return 'dashboard (head)';
  if (/log_monitor/.test(cmd)) return `log monitor (${node})`;
  if (/monitor\.py/.test(cmd)) return 'autoscaler monitor (head)';
  if (/ray\.util\.client\.server/.test(cmd)) return `ray client server (${node})`;
  if (/from multiprocessing/.test(cmd)) return `multiprocessing helper (${node})`;
  if (/default_worker/.test(cmd)) return `idle worker (${node})`;
  const m = /dashboard\/modules\/([a-z_]+)/.exec(cmd) ?? /ray-dashboard-([A-Za-z]+)/.exec(cmd);
  if (m) return `dashboard module ${m[1]}`;
  return `${cmd.slice(0, 50)} (${node})`;
}

async function main(): Promise<void> {
  const base = Number(process.env.TBRL_EVAL_RAY_BASE_PORT ?? 46000);
  const cluster = await startLocalRayCluster({ basePort: base });
  const roots = cluster.nodes.map((n) => ({ name: n.name, pid: n.starter.pid! }));
  try {
    await new Promise((r) => setTimeout(r, arg('settle', 15) * 1000));
    const idle = arg('idle', 60);
    const before = snapshot(roots);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, idle * 1000));
    const after = snapshot(roots);
    const secs = (Date.now() - t0) / 1000;
    const byKind = new Map<string, number>();
    for (const [pid, a] of after) {
      const b = before.get(pid);
      byKind.set(a.kind, (byKind.get(a.kind) ?? 0) + a.cpu - (b?.cpu ?? 0));
    }
    let total = 0;
    for (const [kind, cpu] of [...byKind].sort((x, y) => y[1] - x[1])) {
      total += cpu;
      console.log(`${kind.padEnd(40)} ${(cpu / secs * 1000).toFixed(1).padStart(7)} mCPU  (${cpu.toFixed(2)} CPU-s)`);
    }
    console.log(`${'TOTAL'.padEnd(40)} ${(total / secs * 1000).toFixed(1).padStart(7)} mCPU  (${total.toFixed(2)} CPU-s over ${secs.toFixed(0)} s)  load: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  } finally {
    await cluster.stop();
  }
}

void main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
