import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { dirname, join } from 'node:path';
import { errorMessage } from '../errors';
import { potential } from './contract';
import { outputFiles } from './expected';
import { applyFault, revertFault, revertFaults } from './faults';
import type { SynthesizedTask } from './generate';
import { startGatePython, type GatePython } from './gate-server';
import { memoryScratchBase, runProcess, writeFiles } from './host';
import { checkNoSharedCode, type ShareFinding } from './noshare';
import { applyPatches, buildProbes, RERUN_ENTRY, type Probe, type ProbeKind } from './probes';
import type { FileMap } from './types';
import { BUILD_DB_SCRIPT, dimBBuilt, dimBSource, elfBytes, parseDimBRows, parseWorld, safetensorsBytes } from './render';
import { referencePipelineOf, SOLVER_PRELUDE } from './solver-program';
import type { RunProcess } from './spawner';
import { VERIFIER_RUNNER_PY } from './verifier-runner';
import { gradeInTypeScript, PROMISE_TREES, SYNC_TREES, type SqliteDigestCache, type TreeOps } from './ts-grader';

/**
 * Generation-time gates, run on the host in a scratch directory with python3: the rendered
 * programs run exactly as they will in the container (paths come from TBRL_APP / --root). A task
 * that fails any gate is not written.
 */
/** Shortcut probes every task must reject with Φ = 0 (issue #20: at least 14 per domain). */
export const MIN_SHORTCUT_PROBES = 14;

export interface GateResult { name: string; passed: boolean; detail: string }

export interface ProbeResult { name: string; kind: ProbeKind; verifierPassed: boolean; phi: number }

export interface GateReport {
  task: string;
  passed: boolean;
  gates: GateResult[];
  /** Φ of the untouched workspace, then after each reference step. */
  referencePhi: number[];
  probes: ProbeResult[];
  durationMs: number;
  /** How many verifier runs went through the runner and how many through a pytest session (how it ran, not what it found: not written into gates.json). */
  verifierRuns?: { runner: number; pytest: number };
  verifierComparisons?: VerifierComparison[];
}

export interface GradeResult { phi: number; credit: Record<string, number>; gated: Record<string, number> }

export interface GateOptions {
  python?: string;
  /** false: skip the probes (the slowest gate); a function: run only the probes it accepts (tests). */
  probes?: boolean | ((name: string) => boolean);
  /**
   * 'warm' (default): every python3 the gates start is forked from the gate server (gate-server.ts),
   * the untouched workspace is built once and copied for each probe, and probes run `concurrency` at
   * a time. 'process': the original path, one cold python3 start-up per program, probes one by one
   * (the baseline of bench/synth.bench.ts and of the equivalence test). Both check the same things.
   */
  runner?: 'warm' | 'process';
  /** Probes run at once on the warm runner (each in its own workspace); default 2. */
  concurrency?: number;
  /**
   * How the warm runner runs the strict verifier: 'runner' (default) calls its test functions
   * through the gate server's verifier runner (verifier-runner.ts) wherever pytest's result is
   * certain, and pytest elsewhere; 'pytest' always starts a pytest session. The process runner
   * always uses pytest.
   */
  verifier?: 'runner' | 'pytest';
  /**
   * Tests: at every verifier run, also run real pytest on a copy of the same workspace and record
   * both per-test outcomes in `GateReport.verifierComparisons` (slow; the runner must agree).
   */
  compareVerifiers?: boolean;
  /**
   * The TypeScript grader reads each distinct SQLite file's rows once per gate run (default true on
   * the warm runner) instead of starting a python3 per grading; false is the previous path.
   */
  reuseSqliteReads?: boolean;
  /**
   * Who starts the gates' processes: 'helper' (default on the warm runner) hands them to the gate
   * server's spawner (spawner.ts: vfork + exec, Node's own memory is never forked); 'node' is Node's
   * spawn, the previous path.
   */
  spawner?: 'helper' | 'node';
  /**
   * Where scratch workspaces and the programs' TMPDIR live: 'memory' (default on the warm runner) a
   * private directory on /dev/shm when it is an exec-able tmpfs (host.ts memoryScratchBase), else
   * os.tmpdir(); 'tmpdir' os.tmpdir(), the previous path.
   */
  scratch?: 'memory' | 'tmpdir';
  /**
   * How workspace trees are copied and removed: 'sync' (default on the warm runner; host.ts copyTree
   * and removeTree, one synchronous call per entry) or 'fs-promises' (fs.cp and fs.rm, the previous
   * path). Same trees either way.
   */
  trees?: 'sync' | 'fs-promises';
  /**
   * The gate server's loop: 'fast' (default) forks each program straight from the server, which
   * hands it the compiled code of the .py files on its command line from a cache; 'previous' a
   * handler process per program and no cache (gate-server.ts `previous`). Same programs, same results.
   */
  gateServer?: 'fast' | 'previous';
  /**
   * Shared pipeline runs (default true on the warm runner with the fast server): the two graders run
   * the agent's entry point on byte-identical inputs for every state they grade, so the second run of
   * the same inputs (entry's directory tree, input tree, environment) within one task's gates is
   * answered with the first one's output tree by the gate server (gate-server.ts run_plan); false runs
   * every one.
   */
  shareRuns?: boolean;
  /**
   * The spawner sends a python3 request that the gate server's client would hand over straight to the
   * server, without starting the client (default true on the warm runner with the spawner; spawner.ts);
   * false starts the client for each, the previous path.
   */
  handOver?: boolean;
  /**
   * Reused processes (default true on the warm runner with the fast server): progress.py and the
   * verifier runner may run in a process forked from the gate server that has already run the same
   * script and came out of it as clean as a fresh one (gate-server.ts `reusable`); false forks a
   * fresh process for every run, the previous path.
   */
  reuseProcesses?: boolean;
}

/** One verified state in compare mode: real pytest, the runner running every test, and the verdict the gates used (runner stopping at the first failure, or pytest). */
export interface VerifierComparison { state: string; pytest: TestOutcomes; runner: TestOutcomes | 'undecided'; pytestPassed: boolean; runnerPassed: boolean; gatesPassed: boolean; gatesVia: Verdict['via'] }

/**
 * How the gates start host processes: the interpreter's name and variables added to each process;
 * `run` starts a process (default Node's spawn, runProcess) and `tmp` is the scratch base (default
 * os.tmpdir(); when set, it is also the programs' TMPDIR in `env`).
 */
export interface HostRun { python: string; env: Record<string, string>; verifierRunner?: string; sqliteDigests?: SqliteDigestCache; run?: RunProcess; tmp?: string; trees?: TreeOps; pytestEnv?: () => Promise<Record<string, string>>; sharedRunsEnv?: Record<string, string>; reuse?: { progress: Record<string, string>; runner: Record<string, string> } }

const run = (host: HostRun): RunProcess => host.run ?? runProcess;
/** The variable that lets the gate server run this script in a reused process: the sha256 of the script's bytes. */
const reuseMarker = (script: string): Record<string, string> => ({ TBRL_GATE_REUSE: createHash('sha256').update(script).digest('hex') });
const withoutHandOver = (spawn: RunProcess): RunProcess => (argv, options) => spawn(argv, { ...options, direct: false });
const trees = (host: HostRun): TreeOps => host.trees ?? PROMISE_TREES;

const gatePythons = new Map<string, Promise<GatePython>>();
let gateRuns = 0;

/** One gate server per interpreter for the whole process (it starts in about a second; tasks share it); `previous`: the previous server loop (baselines). */
export function sharedGatePython(python = 'python3', previous = false): Promise<GatePython> {
  const key = `${python}\0${previous}`;
  let started = gatePythons.get(key);
  if (!started) {
    started = startGatePython(python, { previous });
    gatePythons.set(key, started);
  }
  return started;
}

/** Stops the shared gate servers (they also die with the process). */
export async function closeGatePythons(): Promise<void> {
  const all = [...gatePythons.values()];
  gatePythons.clear();
  for (const p of all) await (await p).close();
}

/** Lay out the untouched workspace: root/app with the inputs, the SQLite database built, root/tests. */
async function prepare(t: SynthesizedTask, root: string, host: HostRun): Promise<string> {
  const app = join(root, 'app');
  await writeFiles(app, t.inputs);
  if (t.inputs[BUILD_DB_SCRIPT]) {
    const built = await run(host)([host.python, join(app, BUILD_DB_SCRIPT), app], { env: host.env });
    if (built.code !== 0) throw new Error(`building the SQLite database failed: ${built.stderr.slice(-400)}`);
    await rm(join(app, 'setup'), { recursive: true, force: true });
  }
  await mkdir(join(app, 'out'), { recursive: true });
  const tests: Record<string, string> = {};
  for (const [path, text] of Object.entries(t.taskFiles)) if (path.startsWith('tests/') || path === 'test_weights.json') tests[path] = text;
  await writeFiles(root, tests);
  return app;
}

export async function gradeOnHost(t: SynthesizedTask, root: string, app: string, python: string | HostRun = 'python3'): Promise<GradeResult> {
  const host = typeof python === 'string' ? { python, env: {} } : python;
  // With shared runs, both graders' entry-point runs see the bash stand-in and the task's scope.
  const r = await run(host)([host.python, join(root, 'tests/progress.py'), '--root', app], { env: { ...host.env, ...host.sharedRunsEnv, ...host.reuse?.progress } });
  if (r.code !== 0) throw new Error(`progress grader failed (exit ${r.code}): ${r.stderr.slice(-600)}`);
  const parsed = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as GradeResult;
  // The TypeScript path recomputes gating and Φ from the grader's raw credits: the two must agree.
  const ts = potential(t.contract, parsed.credit);
  if (Math.abs(ts - parsed.phi) > 1e-9) throw new Error(`grader printed Φ=${parsed.phi} but its credits give Φ=${ts}`);
  // And an independent TypeScript grader must give the same credit on the same workspace.
  const own = await gradeInTypeScript(t, app, host.env, host.sqliteDigests, { run: host.run, tmp: host.tmp, trees: host.trees, entryEnv: host.sharedRunsEnv && { ...host.env, ...host.sharedRunsEnv } });
  for (const n of t.contract.nodes) {
    if (Math.abs(own.credit[n.id] - parsed.credit[n.id]) > 1e-9) throw new Error(`graders disagree on node ${n.id}: progress.py gives ${parsed.credit[n.id]}, the TypeScript grader ${own.credit[n.id]}`);
  }
  return parsed;
}

/** Per-test outcome of the strict verifier ("passed" / "failed"), as pytest's -rA summary or the runner reports it. */
export type TestOutcomes = Record<string, string>;

export interface Verdict { passed: boolean; log: string; via: 'pytest' | 'runner'; tests?: TestOutcomes }

/**
 * The strict verdict. With the gate server's runner and `testFiles` (the task's tests/ files), the
 * runner decides where it can: tests/ must be exactly those files (directVerifierFits), and since
 * they are then the generated verifier — whose every test either passes or raises AssertionError
 * (each check runs inside `_failure`, which turns any Exception into a message; no test exits the
 * process, calls pytest.exit or replaces the interpreter) — pytest's exit status is non-zero as soon
 * as one test fails, so the runner stops at the first failure: the verdict cannot change, and the
 * hidden suite's pipeline runs are skipped for a workspace that has already failed.
 */
export async function verifyOnHost(root: string, app: string, python: string | HostRun = 'python3', testFiles?: FileMap): Promise<Verdict> {
  const host = typeof python === 'string' ? { python, env: {} } : python;
  if (host.verifierRunner && testFiles && (await directVerifierFits(root, testFiles))) {
    const direct = await verifyWithRunner(root, app, host, { stopAtFirstFailure: true, reuse: true });
    if (direct) return direct;
  }
  return verifyWithPytest(root, app, host);
}

export async function verifyWithPytest(root: string, app: string, host: HostRun): Promise<Verdict> {
  const r = await run(host)([host.python, '-m', 'pytest', '-p', 'no:cacheprovider', '-c', join(root, 'tests/pytest.ini'), '--rootdir', join(root, 'tests'), '-q', '-rA', join(root, 'tests/test_outputs.py')], { cwd: app, env: { ...host.env, ...(await host.pytestEnv?.()), TBRL_APP: app }, timeoutMs: 300_000 });
  const tests: TestOutcomes = {};
  for (const m of r.stdout.matchAll(/^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) \S*::(\w+)/gm)) tests[m[2]] = m[1].toLowerCase();
  return { passed: r.code === 0, log: r.stdout + r.stderr, via: 'pytest', tests };
}

let verdictFiles = 0;

/** The verifier's tests through the gate server's runner; undefined when only pytest can decide. */
export async function verifyWithRunner(root: string, app: string, host: HostRun, options: { stopAtFirstFailure?: boolean; reuse?: boolean } = {}): Promise<Verdict | undefined> {
  if (!host.verifierRunner) return undefined;
  const out = join(host.tmp ?? tmpdir(), `tbrl-verdict-${process.pid}-${++verdictFiles}.json`);
  try {
    const r = await run(host)([host.python, host.verifierRunner, join(root, 'tests/test_outputs.py'), out, ...(options.stopAtFirstFailure ? ['--stop-at-first-failure'] : [])], { cwd: app, env: { ...host.env, TBRL_APP: app, ...(options.reuse ? host.reuse?.runner : {}) }, timeoutMs: 300_000 });
    if (r.code !== 0 && r.code !== 1) return undefined;
    const result = JSON.parse(readFileSync(out, 'utf8')) as { tests: TestOutcomes; undecided: string | null };
    if (result.undecided !== null) return undefined;
    const passed = r.code === 0 && Object.values(result.tests).every((o) => o === 'passed');
    return { passed, log: Object.entries(result.tests).map(([n, o]) => `${o.toUpperCase()} ${n}`).join('\n') + r.stderr, via: 'runner', tests: result.tests };
  } catch {
    return undefined;
  } finally {
    rmSync(out, { force: true });
  }
}

/**
 * Whether pytest would see nothing but the verifier the task ships: root/tests holds exactly the
 * task's test files, byte for byte (no conftest.py, no __init__.py, no other test file; pytest's own
 * __pycache__ aside), and the pytest.ini given with -c sets no option. With -c and --rootdir on the
 * command line, that is all pytest reads (conftest.py is looked up only from the ini's directory
 * down); installed plugins and PYTEST_ADDOPTS are checked by the server and the runner.
 */
async function directVerifierFits(root: string, testFiles: FileMap): Promise<boolean> {
  // Synchronous reads (a few small files on the scratch disk, every verifier run): the promise API's
  // open / fstat / read / close round trips through the thread pool cost more CPU than the reads.
  const dir = join(root, 'tests');
  const present: string[] = [];
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) { if (e.name !== '__pycache__') walk(p); } else present.push(`tests/${p}`);
    }
  };
  try {
    walk('');
  } catch {
    return false;
  }
  const wanted = Object.keys(testFiles).filter((p) => p.startsWith('tests/')).sort();
  if (!isDeepStrictEqual(present.sort(), wanted)) return false;
  for (const p of wanted) {
    let text: string | undefined;
    try {
      text = readFileSync(join(root, p), 'utf8');
    } catch {
      text = undefined;
    }
    if (text !== testFiles[p]) return false;
  }
  const ini = testFiles['tests/pytest.ini'] ?? '';
  return ini.split('\n').every((l) => /^\s*(\[pytest\])?\s*([#;].*)?$/.test(l));
}

async function runStep(app: string, script: string, host: HostRun): Promise<void> {
  await runInApp(app, ['bash', '-c', `${SOLVER_PRELUDE}\n${script}`], host);
}

async function runInApp(app: string, argv: string[], host: HostRun): Promise<void> {
  const r = await run(host)(argv, { env: { ...host.env, TBRL_APP: app } });
  if (r.code !== 0) throw new Error(`reference step failed (exit ${r.code}): ${r.stderr.slice(-600)}`);
}

async function applyProbe(app: string, probe: Probe, host: HostRun): Promise<void> {
  // Synchronous: a handful of small files per probe (as the tree copies, host.ts).
  for (const [path, text] of Object.entries(probe.files)) {
    const target = join(app, path);
    if (text === null) rmSync(target, { recursive: true, force: true });
    else {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, text);
      if (path.endsWith('.sh')) chmodSync(target, 0o755);
    }
  }
  if (probe.patches) {
    const pipeline = join(app, 'ref_pipeline.py');
    writeFileSync(pipeline, applyPatches(readFileSync(pipeline, 'utf8'), probe.patches));
  }
  if (probe.after === RERUN_ENTRY && host.run) await rerunEntryPoint(app, host);
  else if (probe.after) await runStep(app, probe.after, host);
}

/**
 * RERUN_ENTRY without the `bash -c` around it: that bash only set APP (= TBRL_APP) and exec'd
 * `bash "$APP/pipeline.sh" "$APP/data" "$APP/out"` (bash 5.2 execs a -c string's last command), so
 * the entry point's bash gets the same argv, cwd and variables (TBRL_APP included) — only SHLVL,
 * which bash counts, is one lower. One bash start-up fewer per near miss and re-run (~15 a task).
 */
async function rerunEntryPoint(app: string, host: HostRun): Promise<void> {
  await runInApp(app, ['bash', `${app}/pipeline.sh`, `${app}/data`, `${app}/out`], host);
}

export function staticGates(t: SynthesizedTask): GateResult[] {
  const out: GateResult[] = [];
  const gate = (name: string, fn: () => string | undefined) => {
    try {
      const problem = fn();
      out.push({ name, passed: problem === undefined, detail: problem ?? 'ok' });
    } catch (err) {
      out.push({ name, passed: false, detail: errorMessage(err) });
    }
  };
  const { spec, draw } = t;
  gate('round-trip', () => {
    const back = parseWorld(spec, t.cleanInputs, { domain: draw.world.domain, tier: draw.world.tier, seed: draw.world.seed });
    return isDeepStrictEqual(back, draw.world) ? undefined : 'parsing the rendered files does not give W back';
  });
  gate('faults-reversible', () => {
    for (const f of draw.faults) {
      const changed = applyFault(spec, draw.world, f, t.cleanInputs);
      if (isDeepStrictEqual(changed, t.cleanInputs)) return `fault ${f.class} changes nothing`;
      if (!isDeepStrictEqual(revertFault(spec, draw.world, f, changed), t.cleanInputs)) return `fault ${f.class} does not revert exactly`;
    }
    return isDeepStrictEqual(revertFaults(spec, draw.world, draw.faults, t.inputs), t.cleanInputs) ? undefined : 'reverting the whole fault plan does not restore the rendered files';
  });
  gate('share-no-code', () => {
    const findings: ShareFinding[] = checkNoSharedCode([
      { name: 'grader', file: 'tests/progress.py', text: t.taskFiles['tests/progress.py'] },
      { name: 'verifier', file: 'tests/test_outputs.py', text: t.taskFiles['tests/test_outputs.py'] },
      { name: 'solver', file: 'solution.sh', text: t.taskFiles['solution.sh'] },
    ]);
    const rank = { reference: 0, import: 1, function: 2, line: 3 } as const;
    findings.sort((x, y) => rank[x.kind] - rank[y.kind]);
    return findings.length === 0 ? undefined : findings.slice(0, 5).map((f) => `${f.between.join('/')} share ${f.kind}: ${f.detail}`).join('; ');
  });
  gate('no-leak', () => {
    const env = Object.entries(t.taskFiles).filter(([p]) => p.startsWith('app/') || p === 'Dockerfile');
    const secrets = [...Object.values(outputFiles(spec, t.expected)).filter((s) => s.split('\n').length > 2), 'def table_credit', 'def check_outputs', 'ref_pipeline', '"expected"'];
    for (const [path, text] of env) {
      for (const s of secrets) if (text.includes(s)) return `${path} (visible to the agent) contains ${JSON.stringify(s.slice(0, 60))}`;
    }
    return undefined;
  });
  return out;
}

export async function runGates(t: SynthesizedTask, options: GateOptions = {}): Promise<GateReport> {
  const started = Date.now();
  const python = options.python ?? 'python3';
  const warm = (options.runner ?? 'warm') === 'warm';
  const server = warm ? await sharedGatePython(python, options.gateServer === 'previous') : undefined;
  const tmp = warm && (options.scratch ?? 'memory') === 'memory' ? memoryScratchBase() : undefined;
  const host: HostRun = {
    python,
    env: { ...server?.env, ...(tmp ? { TMPDIR: tmp } : {}) },
    verifierRunner: (options.verifier ?? 'runner') === 'runner' ? server?.verifierRunner : undefined,
    sqliteDigests: warm && options.reuseSqliteReads !== false ? new Map() : undefined,
    run: warm && (options.spawner ?? 'helper') === 'helper' && server?.run ? (options.handOver === false ? withoutHandOver(server.run) : server.run) : undefined,
    pytestEnv: server?.pytestEnv,
    tmp,
    trees: warm && (options.trees ?? 'sync') === 'sync' ? SYNC_TREES : undefined,
    // One scope per task's gates: runs are shared within it only.
    sharedRunsEnv: warm && options.shareRuns !== false && server?.sharedRunsPath ? { PATH: server.sharedRunsPath, TBRL_SHARED_RUNS: `${process.pid}-${++gateRuns}` } : undefined,
    // The gates' own programs may run in a process that ran the same script before (gate-server.ts reused_process).
    reuse: warm && options.reuseProcesses !== false && options.gateServer !== 'previous' && server?.mode === 'warm'
      ? { progress: reuseMarker(t.taskFiles['tests/progress.py'] ?? ''), runner: reuseMarker(VERIFIER_RUNNER_PY) }
      : undefined,
  };
  const testFiles: FileMap = Object.fromEntries(Object.entries(t.taskFiles).filter(([p]) => p.startsWith('tests/')));
  const verifierRuns: Record<Verdict['via'], number> = { runner: 0, pytest: 0 };
  const comparisons: VerifierComparison[] = [];
  const verify = async (state: string, root: string, app: string): Promise<Verdict> => {
    // Tests: real pytest, and the runner running every test, each on a copy made before anything
    // runs (a pipeline may change the workspace); the gates' own verdict is taken on the original.
    const copies = [`${root}-pytest`, `${root}-runner`];
    if (options.compareVerifiers) for (const c of copies) await cp(root, c, { recursive: true, verbatimSymlinks: true });
    const verdict = await verifyOnHost(root, app, host, testFiles);
    verifierRuns[verdict.via]++;
    if (options.compareVerifiers) {
      try {
        const viaPytest = await verifyWithPytest(copies[0], join(copies[0], 'app'), host);
        const everyTest = await verifyWithRunner(copies[1], join(copies[1], 'app'), host);
        comparisons.push({ state, pytest: viaPytest.tests ?? {}, runner: everyTest?.tests ?? 'undecided', pytestPassed: viaPytest.passed, runnerPassed: everyTest?.passed ?? !viaPytest.passed, gatesPassed: verdict.passed, gatesVia: verdict.via });
      } finally {
        for (const c of copies) await rm(c, { recursive: true, force: true });
      }
    }
    return verdict;
  };
  const gates = staticGates(t);
  const referencePhi: number[] = [];
  const probes: ProbeResult[] = [];
  const scratch = await trees(host).scratch('tbrl-synth-gate-', tmp);
  // The finished reference workspace, copied for probes that start from it (the steps run once).
  let referenceRoot: string | undefined;
  // Warm runner: the untouched workspace, built once and copied for the reference and for the
  // probes that start from it (prepare is deterministic: the same files and SQLite database every
  // time). If building it fails, everything prepares its own workspace and fails as before.
  let pristineRoot: string | undefined;
  // Both trees are read once and written from memory for each copy (TreeOps.snapshot): nothing
  // changes either once it is built (every probe, and the reference, work on copies).
  let copyPristine: ((dst: string) => Promise<void>) | undefined;
  let copyReference: ((dst: string) => Promise<void>) | undefined;
  try {
    if (warm) {
      pristineRoot = join(scratch.dir, 'pristine');
      await prepare(t, pristineRoot, host).catch(() => { pristineRoot = undefined; });
      if (pristineRoot) copyPristine = trees(host).snapshot?.(pristineRoot);
    }
    const fresh = async (root: string): Promise<string> => {
      if (!pristineRoot) return prepare(t, root, host);
      await (copyPristine ? copyPristine(root) : trees(host).copy(pristineRoot, root));
      return join(root, 'app');
    };
    // Reference solution, step by step.
    const reference = async (): Promise<void> => {
      try {
        const root = join(scratch.dir, 'reference');
        const app = await fresh(root);
        await sqliteRoundTrip(t, app, host);
        referencePhi.push((await gradeOnHost(t, root, app, host)).phi);
        for (const step of t.steps) {
          await runStep(app, step.script, host);
          referencePhi.push((await gradeOnHost(t, root, app, host)).phi);
        }
        const partial = referencePhi.slice(1, -1);
        const monotone = referencePhi.every((p, i) => i === 0 || p >= referencePhi[i - 1] - 1e-12);
        gates.push({ name: 'phi-monotone', passed: monotone, detail: monotone ? referencePhi.join(' → ') : `Φ falls along the reference: ${referencePhi.join(' → ')}` });
        const inside = partial.every((p) => p > 0 && p < 1);
        gates.push({ name: 'phi-partial-inside', passed: inside, detail: inside ? 'every partial state has 0 < Φ < 1' : `partial states: ${partial.join(', ')}` });
        const final = referencePhi[referencePhi.length - 1];
        gates.push({ name: 'reference-phi-1', passed: Math.abs(final - 1) < 1e-9, detail: `Φ(s_T) = ${final}` });
        const verdict = await verify('reference', root, app);
        referenceRoot = root;
        if (warm) copyReference = trees(host).snapshot?.(root);
        gates.push({ name: 'reference-passes', passed: verdict.passed, detail: verdict.passed ? 'strict verifier passes the reference' : verdict.log.slice(-1200) });
      } catch (err) {
        gates.push({ name: 'reference-runs', passed: false, detail: errorMessage(err) });
      }
    };
    const all = options.probes === false ? [] : buildProbes({ spec: t.spec, world: t.draw.world, faults: t.draw.faults, inputs: t.inputs, cleanInputs: t.cleanInputs, expected: t.expected });
    const list = typeof options.probes === 'function' ? all.filter((p) => (options.probes as (n: string) => boolean)(p.name)) : all;
    // Per probe, in the probes' order whatever order they finish in.
    const outcomes: { result?: ProbeResult; error?: string }[] = list.map(() => ({}));
    const runProbe = async (probe: Probe, index: number): Promise<void> => {
      const root = join(scratch.dir, `probe-${probe.name}`);
      try {
        let app: string;
        if (probe.reference) {
          if (!referenceRoot) throw new Error('the reference solution did not run, so this probe has no workspace to start from');
          await (copyReference ? copyReference(root) : trees(host).copy(referenceRoot, root));
          app = join(root, 'app');
        } else app = await fresh(root);
        await applyProbe(app, probe, host);
        const phi = (await gradeOnHost(t, root, app, host)).phi;
        const verdict = await verify(probe.name, root, app);
        outcomes[index].result = { name: probe.name, kind: probe.kind, verifierPassed: verdict.passed, phi };
      } catch (err) {
        outcomes[index].error = `${probe.name}: ${errorMessage(err)}`;
      } finally {
        await trees(host).remove(root);
      }
    };
    // The reference pipeline and its near-miss variants are the generator's own scripts, like
    // progress.py: their runs (through the task's pipeline.sh) may go to reused processes too.
    if (host.reuse && server?.allowReuse) await server.allowReuse(generatedPipelines(t.steps, list));
    if (!warm) {
      await reference();
      for (const [index, probe] of list.entries()) await runProbe(probe, index);
    } else {
      // Each probe has its own workspace and the graders' scratch directories are private, so
      // probes are independent of one another and of the reference; within a probe everything
      // stays sequential. Probes over the untouched workspace run while the reference steps do
      // (`concurrency` processes in all); probes over the finished reference wait for it.
      const width = Math.max(1, options.concurrency ?? 2);
      const queue = [...list.keys()].sort((a, b) => Number(Boolean(list[a].reference)) - Number(Boolean(list[b].reference)));
      let referenceDone = false;
      const referenceRun = reference().finally(() => { referenceDone = true; });
      const worker = async (): Promise<void> => {
        for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
          if (list[index].reference && !referenceDone) await referenceRun;
          await runProbe(list[index], index);
        }
      };
      await Promise.all([referenceRun.then(worker), ...Array.from({ length: width - 1 }, worker)]);
    }
    if (options.probes !== false) {
      // Near misses must stay strictly below the honest final state.
      const honest = referencePhi.length > 0 ? referencePhi[referencePhi.length - 1] : 1;
      const failures: string[] = [];
      for (const o of outcomes) {
        if (o.error) failures.push(o.error);
        if (!o.result) continue;
        const { name, kind, verifierPassed, phi } = o.result;
        probes.push(o.result);
        if (verifierPassed) failures.push(`${kind} ${name} passes the strict verifier`);
        if (kind === 'shortcut' && phi !== 0) failures.push(`shortcut ${name} earns Φ=${phi} (must be exactly 0)`);
        if (kind === 'near-miss' && !(phi < honest - 1e-9)) failures.push(`near miss ${name} earns Φ=${phi}, not below the honest ${honest}`);
      }
      const shortcuts = all.filter((p) => p.kind === 'shortcut').length;
      if (shortcuts < MIN_SHORTCUT_PROBES) failures.push(`only ${shortcuts} shortcut probes (at least ${MIN_SHORTCUT_PROBES})`);
      gates.push({ name: 'gaming-probes', passed: failures.length === 0, detail: failures.length ? failures.join('; ') : `${list.length} of ${all.length} probes run (${shortcuts} shortcuts at Φ = 0, the rest near misses below Φ = ${honest}); the verifier fails all` });
    }
  } finally {
    await scratch.dispose();
  }
  return { task: t.id, passed: gates.every((g) => g.passed), gates, referencePhi, probes, durationMs: Date.now() - started, verifierRuns, ...(options.compareVerifiers ? { verifierComparisons: comparisons } : {}) };
}

/**
 * The Python scripts the gates' pipeline runs execute that the generator wrote: the reference
 * pipeline (solver-program.ts) and each near miss's patched copy of it. Neither rebinds a module
 * global nor changes a module's objects in place (only the stdlib's caches: re, _strptime, struct),
 * which is what a reused process relies on (gate-server.ts `reusable`).
 */
function generatedPipelines(steps: SynthesizedTask['steps'], probes: Probe[]): string[] {
  const pipeline = referencePipelineOf(steps);
  if (pipeline === undefined) return [];
  const variants: string[] = [];
  for (const probe of probes) {
    if (!probe.patches) continue;
    try {
      variants.push(applyPatches(pipeline, probe.patches));
    } catch {
      // The probe itself fails loudly on a missing line (applyProbe).
    }
  }
  return [pipeline, ...variants];
}

/** The binary built from its text source (SQLite or safetensors) holds exactly the rows the source declares. */
async function sqliteRoundTrip(t: SynthesizedTask, app: string, host: HostRun): Promise<void> {
  const d = t.spec.dimB;
  if (!dimBBuilt(t.spec)) return;
  if (d.format === 'elf') {
    // The stripped binary is run (x86-64 Linux): what it prints must be its source, and its bytes the digest's.
    const ran = await run(host)([join(app, d.file)], { env: host.env });
    if (ran.code !== 0) throw new Error(`running ${d.file} failed (exit ${ran.code}): ${ran.stderr.slice(-400)}`);
    const source = t.inputs[dimBSource(t.spec)];
    if (ran.stdout !== source) throw new Error(`${d.file} does not print the rows of its source`);
    if (!(await readFile(join(app, d.file))).equals(elfBytes(Buffer.from(source, 'utf8')))) throw new Error(`${d.file} built in the image differs byte for byte from the binary the digest describes`);
    return;
  }
  const reader = d.format === 'sql'
    ? `import json,sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nprint(json.dumps(c.execute("SELECT ${d.id}, ${d.category}, ${d.unit} FROM ${d.table} ORDER BY rowid").fetchall()))`
    : `import json,struct,sys\nb=open(sys.argv[1],"rb").read()\nn=struct.unpack("<Q",b[:8])[0]\nh=json.loads(b[8:8+n])\nm=h["__metadata__"]\nt=h[${JSON.stringify(d.unit)}]\nu=struct.unpack("<%dq"%t["shape"][0],b[8+n+t["data_offsets"][0]:8+n+t["data_offsets"][1]])\nprint(json.dumps([list(r) for r in zip(json.loads(m["ids"]),json.loads(m["categories"]),u)]))`;
  const r = await run(host)([host.python, '-c', reader, join(app, d.file)], { env: host.env });
  if (r.code !== 0) throw new Error(`reading ${d.file} back failed: ${r.stderr.slice(-400)}`);
  const rows = (JSON.parse(r.stdout) as [string, string, number][]).map(([id, category, unit]) => ({ id, category, unit }));
  const declared = parseDimBRows(t.spec, t.inputs[dimBSource(t.spec)]);
  if (!isDeepStrictEqual(rows, declared)) throw new Error(`${d.file} does not hold the rows of its source`);
  if (d.format === 'safetensors' && !(await readFile(join(app, d.file))).equals(safetensorsBytes(t.spec, declared))) throw new Error(`${d.file} built in the image differs byte for byte from the shard the digest describes`);
}
