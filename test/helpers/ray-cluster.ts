import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { get } from 'node:http';

/** Every process on the machine now: its parent and its utime + stime in seconds (clock ticks, 100 a second), by pid. */
export function processStats(): Map<number, { ppid: number; cpu: number }> {
  const stats = new Map<number, { ppid: number; cpu: number }>();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(p), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      /* ended meanwhile */
    }
  }
  return stats;
}


/**
 * A real local multi-node Ray cluster for the eval tests and benchmark: a head and worker nodes
 * started with `ray start --block` on this machine, each on its own ports (from `basePort`, 100 ports
 * in all, two workers at most) so nothing else's Ray is touched. Worker nodes carry the `docker` custom resource; the head
 * has none, so trials land only on workers. Stopped by the PIDs of its own processes, never `ray stop`.
 */
export interface LocalRayCluster {
  dashboard: string;
  nodes: Array<{ name: string; starter: ChildProcess }>;
  /** SIGKILLs the raylet of worker node i (1-based): the node is lost as if the machine went away. */
  killWorkerRaylet(i: number): number;
  /** The raylet PID of worker node i (1-based). */
  rayletPid(i: number): number | undefined;
  /**
   * Starts counting the CPU seconds of the cluster's processes (its daemons, workers, drivers, the
   * node servers and their reapers), sampled every `everyMs` (default 2 s): a process that ends
   * between two samples loses what it used since the last one (the raylets do not collect their
   * workers' times). For the benchmark's account of what Ray's side costs on this machine.
   */
  watchCpu(everyMs?: number): { stop(): number };
  stop(): Promise<void>;
}

const VENV = resolve('.venv/ray');
/** What the studio's local dev clusters run with (scripts/ray.sh reads the same file). */
const LOCAL_SETTINGS = resolve(__dirname, '..', '..', 'scripts', 'ray-local.env');

/**
 * The variables of scripts/ray-local.env (KEY=VALUE lines, `#` comments), each unless the environment
 * sets it already; with TBRL_RAY_QUIET=0 only RAY_USAGE_STATS_ENABLED (Ray's own defaults otherwise, to
 * compare against). Exported for its test: ray.sh's reading of the file must give the same.
 */
export function localRaySettings(env: NodeJS.ProcessEnv = process.env, file = LOCAL_SETTINGS): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`${file}: "${line}" is not KEY=VALUE (no quotes, no spaces around =): fix that line`);
    if (env.TBRL_RAY_QUIET === '0' && m[1] !== 'RAY_USAGE_STATS_ENABLED') continue;
    if (env[m[1]] === undefined) out[m[1]] = m[2];
  }
  return out;
}

/** A `K=V,K=V` list (the benches' flags) as variables; an empty value is kept (it clears a setting of the file). */
export function envList(text: string): Record<string, string> {
  return Object.fromEntries(text.split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

/**
 * `ray start` through the local clusters' launcher (scripts/ray-start.py, which scripts/ray.sh uses too):
 * what of scripts/ray-local.env `ray start` has no option for (the dashboard's modules, the light setup
 * script for runtime-env workers), and more patience: a node gets 30 s to register with the GCS (a
 * constant inside ray/_private/node.py), which a shared two-core machine under load misses;
 * TBRL_RAY_START_PATIENCE_S makes each of Ray's asks wait up to 4 minutes instead.
 */
const RAY_START = resolve(__dirname, '..', '..', 'scripts', 'ray-start.py');

function descendants(pid: number): number[] {
  const out: number[] = [];
  const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout.split('\n').map((s) => Number(s.trim())).filter((n) => n > 0);
  for (const c of children) out.push(c, ...descendants(c));
  return out;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** env: variables over the process's and scripts/ray-local.env's (a bench's A/B of one setting of the file). */
export async function startLocalRayCluster(options: { basePort?: number; workers?: number; dockerSlots?: number; env?: Record<string, string> } = {}): Promise<LocalRayCluster> {
  const base = options.basePort ?? Number(process.env.TBRL_EVAL_RAY_BASE_PORT ?? 44000);
  const workers = options.workers ?? 2;
  const temp = `/tmp/tbrl-eval-ray-${base}`;
  mkdirSync(temp, { recursive: true });
  // A HOME of its own: a token file in ~/.ray (another cluster's) would otherwise switch this one to token auth.
  mkdirSync(join(temp, 'home'), { recursive: true });
  const given = { ...process.env, ...options.env };
  const env = { TBRL_RAY_START_PATIENCE_S: '240', ...given, ...localRaySettings(given), HOME: join(temp, 'home'), PATH: `${VENV}/bin:${process.env.PATH}` };
  const nodes: LocalRayCluster['nodes'] = [];
  const common = ['--node-ip-address', '127.0.0.1', '--num-gpus', '0', '--object-store-memory', '100000000', '--disable-usage-stats', '--block'];
  // base..base+2 head services; 6 fixed ports per node from base+10; worker-process ports: head 20, each worker 25 (base+30..base+99).
  const ports = (i: number): string[] => {
    const p = base + 10 + i * 6;
    const [min, max] = i === 0 ? [base + 30, base + 49] : [base + 50 + (i - 1) * 25, base + 74 + (i - 1) * 25];
    return ['--node-manager-port', String(p), '--object-manager-port', String(p + 1), '--dashboard-agent-listen-port', String(p + 2), '--dashboard-agent-grpc-port', String(p + 3), '--metrics-export-port', String(p + 4), '--runtime-env-agent-port', String(p + 5), '--min-worker-port', String(min), '--max-worker-port', String(max)];
  };
  const start = (name: string, args: string[]): ChildProcess => {
    const log = openSync(join(temp, `${name}.start.log`), 'w');
    const starter = spawn(join(VENV, 'bin', 'python'), [RAY_START, 'start', ...args, ...common], { env, stdio: ['ignore', log, log], detached: false });
    nodes.push({ name, starter });
    return starter;
  };
  const killAll = (): number[] => {
    // Every process the starters spawned (raylets, GCS, dashboard, workers), then the starters. Not the
    // workers' `eval-trial --serve` processes: they get SIGTERM, on which they stop their trial and
    // remove their containers; they are returned to be waited for.
    const all = nodes.flatMap((n) => (n.starter.pid ? [...descendants(n.starter.pid), n.starter.pid] : []));
    const procs = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number);
    // Servers whose worker is gone already were re-parented to init: found by the package path under temp.
    const servers = [...new Set([...all, ...procs.filter((p) => commandOf(p).includes(temp))])].filter((pid) => commandOf(pid).includes('eval-trial --serve'));
    // A server's reaper (`eval-trial --reap`) is left alone: it exits by itself once its server is gone
    // and has removed what that server left; killing it would leave those containers behind.
    const reapers = [...new Set([...all, ...procs.filter((p) => commandOf(p).includes(temp))])].filter((pid) => commandOf(pid).includes('eval-trial --reap'));
    for (const pid of servers) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
    for (const pid of all.filter((p) => !servers.includes(p) && !reapers.includes(p))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    // Workers re-parented to init when their raylet died are found by the temp dir in their command line.
    for (const pid of procs) {
      if (pid !== process.pid && !servers.includes(pid) && !reapers.includes(pid) && commandOf(pid).includes(temp)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    return [...servers, ...reapers];
  };
  /**
   * `ray start` gives a node 30 s to register with the GCS (hard-coded in ray/_private/node.py); on
   * this shared two-core machine under load that is sometimes too short and the starter exits. Such a
   * node is started again (the cluster as a whole for the head), up to three tries.
   */
  const startNode = async (name: string, args: string[], ready: () => Promise<boolean>, what: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const starter = start(name, args);
      let exited = false;
      starter.once('exit', () => (exited = true));
      try {
        await waitFor(async () => {
          if (exited) throw new Error(`ray start for ${name} exited: ${readFileSync(join(temp, `${name}.start.log`), 'utf8').trim().split('\n').slice(-2).join(' | ')}`);
          return ready();
        }, 180_000, what);
        return;
      } catch (err) {
        if (attempt >= 3) throw err;
        if (name === 'head') killAll();
        else for (const pid of [...descendants(starter.pid!), starter.pid!]) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
        nodes.splice(nodes.findIndex((n) => n.starter === starter), 1);
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  };
  const dashboard = `http://127.0.0.1:${base + 1}`;
  try {
    await startNode('head', ['--head', '--port', String(base), '--dashboard-host', '127.0.0.1', '--dashboard-port', String(base + 1), '--ray-client-server-port', String(base + 2), '--temp-dir', temp, '--num-cpus', '1', '--include-dashboard', 'true', ...ports(0)],
      async () => (await getJson(`${dashboard}/api/version`)) !== undefined && (await aliveNodes(dashboard)) >= 1, 'the Ray head');
    // One at a time: nodes started together on one host can pick the same plasma socket name and crash.
    for (let i = 1; i <= workers; i++) {
      // Each node its own temp dir (as on separate machines): with one shared logs dir every node's log
      // monitor tails every node's files, so each worker line reaches the driver once per node and the
      // monitors do that work three times over.
      const nodeTemp = join(temp, `worker-${i}`);
      mkdirSync(nodeTemp, { recursive: true });
      await startNode(`worker-${i}`, ['--address', `127.0.0.1:${base}`, '--temp-dir', nodeTemp, '--num-cpus', '1', '--resources', JSON.stringify({ docker: options.dockerSlots ?? 4 }), ...ports(i)],
        async () => (await aliveDockerNodes(dashboard)) >= i, `worker node ${i} with the docker resource`);
    }
  } catch (err) {
    // Nothing of a cluster that did not come up is left running.
    killAll();
    throw err;
  }
  const rayletPid = (i: number): number | undefined => {
    const node = nodes.find((n) => n.name === `worker-${i}`)!;
    return descendants(node.starter.pid!).find((p) => /\/raylet$/.test(commandOf(p).split(' ')[0]));
  };
  /** utime + stime of each of the cluster's processes now: the starters' trees and what runs from its temp dir. */
  const cpuByPid = (): Map<number, number> => {
    const stats = processStats();
    const children = new Map<number, number[]>();
    for (const [pid, x] of stats) children.set(x.ppid, [...(children.get(x.ppid) ?? []), pid]);
    const mine = new Map<number, number>();
    // A server's reaper is re-parented to init once its server has gone: found by the package path under temp.
    const stack = [...nodes.map((n) => n.starter.pid ?? 0), ...[...stats.keys()].filter((pid) => stats.get(pid)!.ppid === 1 && commandOf(pid).includes(temp))];
    while (stack.length) {
      const pid = stack.pop()!;
      if (mine.has(pid) || !stats.has(pid)) continue;
      mine.set(pid, stats.get(pid)!.cpu);
      stack.push(...(children.get(pid) ?? []));
    }
    return mine;
  };
  const watchCpu = (everyMs = 2000): { stop(): number } => {
    let last = cpuByPid();
    let total = 0;
    const sample = (): void => {
      const now = cpuByPid();
      for (const [pid, cpu] of now) total += cpu - (last.get(pid) ?? 0);
      last = now;
    };
    const timer = setInterval(sample, everyMs);
    return {
      stop() {
        clearInterval(timer);
        sample();
        return total;
      },
    };
  };
  return {
    dashboard,
    nodes,
    rayletPid,
    watchCpu,
    killWorkerRaylet(i) {
      const raylet = rayletPid(i);
      if (!raylet) throw new Error(`no raylet under worker-${i}`);
      process.kill(raylet, 'SIGKILL');
      return raylet;
    },
    async stop() {
      // Servers and their reapers: waited for while they remove their containers.
      const servers = killAll();
      const end = Date.now() + 20_000;
      while (servers.some((pid) => commandOf(pid) !== '') && Date.now() < end) await new Promise((r) => setTimeout(r, 250));
      for (const pid of servers) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone, as it should be */
        }
      }
    },
  };
}

async function aliveNodes(dashboard: string): Promise<number> {
  const body = (await getJson(`${dashboard}/api/v0/nodes`)) as undefined | { data?: { result?: { result?: Array<{ state?: string }> } } };
  return (body?.data?.result?.result ?? []).filter((n) => n.state === 'ALIVE').length;
}

export async function aliveDockerNodes(dashboard: string): Promise<number> {
  const body = (await getJson(`${dashboard}/api/v0/nodes`)) as undefined | { data?: { result?: { result?: Array<{ state?: string; resources_total?: Record<string, number> }> } } };
  return (body?.data?.result?.result ?? []).filter((n) => n.state === 'ALIVE' && (n.resources_total?.docker ?? 0) > 0).length;
}

/** Plain http (not fetch): Ray's dashboard refuses requests with the browser headers fetch adds. */
function getJson(url: string): Promise<unknown> {
  return new Promise((res) => {
    const req = get(url, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => {
        try {
          res(r.statusCode === 200 ? JSON.parse(body) : undefined);
        } catch {
          res(undefined);
        }
      });
    });
    req.on('error', () => res(undefined));
    req.setTimeout(5000, () => req.destroy());
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}`);
}
