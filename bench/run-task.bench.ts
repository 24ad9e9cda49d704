// Orchestrator overhead: oracle runs of examples/hello-world through runTask (traced, tests, DepGPO,
// snapshot of changed files, report) against the same oracle commands through a bare sandbox
// (create, exec each command, run the tests, close) in the same process on the same image. The
// ratio is what the run pipeline costs on top of the sandbox work it orchestrates; the per-phase
// times come from the run's own progress events.
// Run: node --import tsx bench/run-task.bench.ts   (TBRL_BENCH_RUNS=N, default 5)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runTask, type RunProgress } from '../src/core/run/run-task';
import { loadTask } from '../src/core/tasks/load';
import { runTests } from '../src/core/reward/tests';
import { DockerSandboxProvider } from '../src/core/sandbox/provider';
import { createTaskSandbox } from '../src/core/run/task-sandbox';

const EXAMPLE = resolve('examples/hello-world');
const RUNS = Number(process.env.TBRL_BENCH_RUNS ?? 5);
const provider = new DockerSandboxProvider();
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-bench-run-task-'));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** One oracle run; returns its wall time and the time spent from each phase event to the next. */
async function oracleRun(i: number): Promise<{ ms: number; phases: Map<string, number> }> {
  const marks: Array<[string, number]> = [];
  const t0 = performance.now();
  const onProgress = (e: RunProgress): void => {
    if (e.type === 'phase') marks.push([e.phase, performance.now()]);
  };
  const { result, error } = await runTask({ taskDir: EXAMPLE, outDir: join(scratch, `r${i}`), policy: 'oracle', env: {}, sandboxProvider: provider, onProgress });
  if (error) throw error;
  if (result.footer.reward?.tests !== 1) throw new Error(`oracle run ${i} scored ${result.footer.reward?.tests}`);
  const ms = performance.now() - t0;
  const phases = new Map<string, number>();
  for (const [k, [name, at]] of marks.entries()) phases.set(name, (phases.get(name) ?? 0) + ((marks[k + 1]?.[1] ?? t0 + ms) - at));
  return { ms, phases };
}

/** The reference solution and the same tests through a bare task sandbox: what a run cannot avoid. */
async function bareRun(): Promise<number> {
  const task = await loadTask(EXAMPLE);
  const solution = readFileSync(join(EXAMPLE, 'solution.sh'), 'utf8');
  const t0 = performance.now();
  const sb = await createTaskSandbox(task, { provider, runId: `bench-run-task-${process.pid}`, hostEnv: {} });
  try {
    const ran = await sb.execArgv(['bash', '-c', solution], { timeoutMs: 120_000 });
    if (ran.exitCode !== 0) throw new Error(`solution.sh exited ${ran.exitCode}: ${ran.output.slice(-500)}`);
    const tests = await runTests({ task, sandbox: sb });
    if (tests.error) throw new Error(`bare tests: ${tests.error.message}`);
  } finally {
    await sb.close();
  }
  return performance.now() - t0;
}

async function main(): Promise<void> {
  await oracleRun(-1); // warm-up: builds (or finds) the image
  await bareRun();
  const full: number[] = [];
  const bare: number[] = [];
  const phaseSums = new Map<string, number[]>();
  for (let i = 0; i < RUNS; i++) {
    const r = await oracleRun(i);
    full.push(r.ms);
    for (const [name, ms] of r.phases) phaseSums.set(name, [...(phaseSums.get(name) ?? []), ms]);
    bare.push(await bareRun());
  }
  const f = median(full);
  const b = median(bare);
  console.log(`| oracle run of examples/hello-world through runTask, median of ${RUNS} | ${f.toFixed(0)} ms | bare sandbox, same commands + tests: ${b.toFixed(0)} ms | ${(f / b).toFixed(2)}x |`);
  console.log(`phases (median ms): ${[...phaseSums].map(([n, xs]) => `${n} ${median(xs).toFixed(0)}`).join(', ')}`);
  console.log(`all runs (ms): runTask ${full.map((x) => x.toFixed(0)).join(' ')}; bare ${bare.map((x) => x.toFixed(0)).join(' ')}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => rmSync(scratch, { recursive: true, force: true }));
