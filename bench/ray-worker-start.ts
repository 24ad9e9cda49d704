/**
 * What a studio-shaped Ray job's worker starts cost on the bench's local cluster (head + 2 workers,
 * test/helpers/ray-cluster.ts), with scripts/ray-local.env as it is against the same with a variable
 * changed: `node --import tsx bench/ray-worker-start.ts [--jobs 4] [--rounds 2] [--b K=V,K=V]` (default
 * B: TBRL_RAY_LIGHT_SETUP_WORKER=0, Ray's own setup_worker.py). Each job is shaped like `tbrl eval --ray`'s:
 * a runtime env (so its supervisor and actors are runtime-env workers), a driver, one actor on each
 * worker node. Prints the cluster's CPU-s per job (every process under the three `ray start`s, sampled
 * each 250 ms), sides alternated A B B A. Uses TBRL_EVAL_RAY_BASE_PORT (default 46000). Run under
 * `flock /work/bench.lock`.
 */
import { loadavg } from 'node:os';
import { envList, startLocalRayCluster } from '../test/helpers/ray-cluster';
import { RayJobsClient } from '../src/core/trainer/jobs';

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const jobs = Number(flag('jobs') ?? 4);
const rounds = Number(flag('rounds') ?? 2);
const bEnv = envList(flag('b') ?? 'TBRL_RAY_LIGHT_SETUP_WORKER=0');

const DRIVER = [
  'import ray',
  'ray.init(address="auto")',
  '@ray.remote(num_cpus=0, resources={"docker": 1})',
  'class Node:',
  '    def ping(self):',
  '        return 1',
  'actors = [Node.options(scheduling_strategy="SPREAD").remote() for _ in range(2)]',
  'print(sum(ray.get([a.ping.remote() for a in actors])))',
].join('\n');

async function side(name: string, env: Record<string, string>): Promise<number[]> {
  const cluster = await startLocalRayCluster({ workers: 2, dockerSlots: 1, env });
  const out: number[] = [];
  try {
    const client = new RayJobsClient({ url: cluster.dashboard });
    const run = async (i: number): Promise<void> => {
      const id = `worker-start-${name}-${i}-${Date.now().toString(36)}`;
      await client.submitNew({ entrypoint: `python -c '${DRIVER}'`, submission_id: id, runtime_env: { env_vars: { PYTHONUNBUFFERED: '1' } }, metadata: {}, entrypoint_num_cpus: 0 });
      const end = await client.wait(id, { timeoutMs: 180_000, intervalMs: 250 });
      if (end.status !== 'SUCCEEDED') throw new Error(`${id} ended ${end.status}: ${end.message ?? ''}`);
    };
    await run(-1); // untimed: the Jobs API's first-use set-up
    for (let i = 0; i < jobs; i++) {
      const watch = cluster.watchCpu(250);
      await run(i);
      // The job's workers exit after it ends: their last CPU lands in the next second.
      await new Promise((r) => setTimeout(r, 1500));
      out.push(watch.stop());
    }
  } finally {
    await cluster.stop();
  }
  return out;
}

async function main(): Promise<void> {
  const label = Object.entries(bEnv).map(([k, v]) => `${k}=${v}`).join(',');
  console.log(`A: scripts/ray-local.env; B: ${label}; ${jobs} jobs per side, ${rounds} round(s); load ${loadavg()[0].toFixed(1)}`);
  const all: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let r = 0; r < rounds; r++) {
    for (const s of (r % 2 === 0 ? ['A', 'B'] : ['B', 'A']) as Array<'A' | 'B'>) {
      const cpu = await side(s, s === 'A' ? {} : bEnv);
      all[s].push(...cpu);
      console.log(`round ${r + 1} ${s}: cluster CPU-s per job ${cpu.map((x) => x.toFixed(2)).join(', ')} (load ${loadavg()[0].toFixed(1)})`);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`median cluster CPU-s per job: A ${median(all.A).toFixed(2)}, B ${median(all.B).toFixed(2)} (B - A ${(median(all.B) - median(all.A)).toFixed(2)}); load ${loadavg()[0].toFixed(1)}`);
}

void main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
