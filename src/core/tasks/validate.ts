import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { errorMessage } from '../errors';
import type { Sandbox, SandboxProvider } from '../sandbox/types';
import { runTests, type TestRunResult } from '../reward/tests';
import { verifierError } from '../run/classify-outcome';
import type { OutcomeClass } from '../run/outcome';
import { createOraclePolicy, oracleTurns } from '../agent/oracle';
import { runAgentLoop } from '../agent/loop';
import { loadSystemPrompt } from '../agent/prompt';
import type { Task } from './model';
import { loadTask } from './load';
import { isTevTask, revalidateTevTask } from '../synth/revalidate';
import { staticCheckTask, type Finding } from './static-checks';
import { installSolution, createTaskSandbox, verifierTestOptions, withVerifierSandbox } from '../run/task-sandbox';
import { runHarborSteps } from '../run/harbor-steps';
import type { LoopResult } from '../agent/loop';

/**
 * `tbrl validate`: a task is valid when its static checks pass, its image builds, the reference
 * solution scores 1 and an agent that does nothing scores below 1. An empty agent that earns
 * anything at all is reported, because those tests reward doing nothing.
 */

export type StageStatus = 'passed' | 'failed' | 'skipped';

export interface ScoredStage {
  status: StageStatus;
  /** Weighted test score in [0, 1]; undefined when the tests could not be scored. */
  score?: number;
  /** Why the stage failed or could not be scored. */
  message?: string;
  durationMs?: number;
  /** The last part of the test output when something went wrong. */
  logTail?: string;
  /** Set when the stage could not judge the task (the verifier crashed): the run's outcome class. */
  outcome?: OutcomeClass;
}

export interface TaskValidation {
  /** The path as given. */
  path: string;
  id?: string;
  format?: Task['format'];
  valid: boolean;
  load: { status: StageStatus; message?: string };
  static: { status: StageStatus; findings: Finding[] };
  /** Tev tasks only: the generation gates re-run from the task's recipe (host, no Docker). */
  tev: { status: StageStatus; message?: string; gates?: number; probes?: number };
  build: { status: StageStatus; message?: string; image?: string; substitutedFrom?: string; durationMs?: number };
  oracle: ScoredStage;
  empty: ScoredStage;
  /** One line per problem, errors first: what a table's "problems" column shows. */
  problems: string[];
  warnings: string[];
  durationMs: number;
}

export type ValidationProgress =
  | { type: 'start'; path: string; index: number; total: number }
  | { type: 'stage'; path: string; stage: 'load' | 'static' | 'tev' | 'build' | 'oracle' | 'empty'; message: string }
  | { type: 'done'; path: string; result: TaskValidation; completed: number; total: number };

export interface ValidateOptions {
  /** Tasks validated at once (each holds up to one container at a time). Default 2. */
  concurrency?: number;
  /** Static checks only: no Docker. */
  staticOnly?: boolean;
  /**
   * How the reference solution runs. `policy` (default): the oracle policy through the agent loop,
   * as `tbrl run --policy oracle` does, so the harness itself is checked too. `script`: the script
   * in the container directly, as Terminal-Bench's oracle agent does.
   */
  oracle?: 'policy' | 'script';
  /** Sandbox provider; required unless staticOnly. */
  provider?: SandboxProvider;
  onProgress?: (event: ValidationProgress) => void;
  signal?: AbortSignal;
  /** Privilege keys the user allowed by name (see tasks/confine.ts). */
  allowPrivileges?: string[];
}

export async function validateTasks(paths: string[], options: ValidateOptions): Promise<TaskValidation[]> {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 2));
  const results: TaskValidation[] = new Array(paths.length);
  let next = 0;
  let completed = 0;
  const worker = async () => {
    while (next < paths.length) {
      const index = next++;
      options.onProgress?.({ type: 'start', path: paths[index], index, total: paths.length });
      results[index] = await validateTask(paths[index], options);
      completed++;
      options.onProgress?.({ type: 'done', path: paths[index], result: results[index], completed, total: paths.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, paths.length) }, worker));
  return results;
}

const skipped = (message?: string): ScoredStage => ({ status: 'skipped', ...(message ? { message } : {}) });

export async function validateTask(path: string, options: ValidateOptions): Promise<TaskValidation> {
  const started = Date.now();
  const stage = (s: 'load' | 'static' | 'tev' | 'build' | 'oracle' | 'empty', message: string) => options.onProgress?.({ type: 'stage', path, stage: s, message });
  const result: TaskValidation = {
    path,
    valid: false,
    load: { status: 'skipped' },
    static: { status: 'skipped', findings: [] },
    tev: { status: 'skipped' },
    build: { status: 'skipped' },
    oracle: skipped(),
    empty: skipped(),
    problems: [],
    warnings: [],
    durationMs: 0,
  };
  const finish = () => {
    result.valid =
      result.load.status === 'passed' &&
      result.static.status === 'passed' &&
      result.tev.status !== 'failed' &&
      (options.staticOnly || (result.build.status === 'passed' && result.oracle.status === 'passed' && result.empty.status === 'passed'));
    result.durationMs = Date.now() - started;
    return result;
  };

  stage('load', 'loading');
  let task: Task;
  try {
    task = await loadTask(path, { allowPrivileges: options.allowPrivileges });
    result.load = { status: 'passed' };
    result.id = task.id;
    result.format = task.format;
  } catch (err) {
    result.load = { status: 'failed', message: errorMessage(err) };
    result.problems.push(`load: ${errorMessage(err).split('\n')[0]}`);
    return finish();
  }

  stage('static', 'static checks');
  const findings = await staticCheckTask(task);
  result.static = { status: findings.some((f) => f.severity === 'error') ? 'failed' : 'passed', findings };
  for (const f of findings) (f.severity === 'error' ? result.problems : result.warnings).push(`${f.check}: ${f.message}`);
  if (isTevTask(task)) {
    // The gates run on the host with python3, like at generation: no Docker needed.
    stage('tev', 'Tev generation gates');
    result.tev = await revalidateTevTask(task);
    if (result.tev.status === 'failed') result.problems.push(`tev: ${result.tev.message}`);
  }
  if (options.staticOnly) return finish();
  if (!options.provider) throw new Error('validateTask needs a sandbox provider unless staticOnly is set');

  // The oracle: the reference solution in a fresh container, then the tests.
  if (!task.solution) {
    result.oracle = { status: 'failed', message: 'the task has no reference solution (solution.sh, solution.yaml or solution/solve.sh)' };
    result.problems.push(`oracle: ${result.oracle.message}`);
  } else {
    stage('build', 'building the image');
    const oracle = await withSandbox(task, options, result, async (sandbox, runId) => {
      const mode = oracleMode(task, options.oracle ?? 'policy');
      stage('oracle', `running the reference solution (${mode === 'policy' ? 'oracle policy through the agent loop' : 'script'})`);
      if (task.harbor?.steps) return runStepsOracle(task, sandbox, options.provider!, runId, mode);
      await installSolution(task, sandbox);
      const ran = mode === 'policy' ? await runOraclePolicy(task, sandbox) : await runSolution(task, sandbox);
      if (ran.error) return { run: undefined, error: ran.error };
      return { run: await verify(task, sandbox, options.provider!, runId), solutionOutput: ran.output };
    });
    if (oracle) result.oracle = scoreStage(oracle, (score) => score >= 1, 'the reference solution must score 1');
    if (result.oracle.status === 'failed') result.problems.push(`oracle: ${result.oracle.message}`);
  }

  // The empty agent: a fresh container straight into the tests.
  if (result.build.status !== 'failed') {
    if (result.build.status === 'skipped') stage('build', 'building the image');
    stage('empty', 'running the tests on an untouched container');
    const empty = await withSandbox(task, options, result, async (sandbox, runId) => ({ run: task.harbor?.steps ? (await runHarborSteps(task, sandbox, options.provider!, runId, async () => ({}))).run : await verify(task, sandbox, options.provider!, runId) }));
    if (empty) {
      result.empty = scoreStage(empty, (score) => score < 1, 'an agent that does nothing scores 1: the tests do not check the work', true);
      if (result.empty.status === 'failed') result.problems.push(`empty agent: ${result.empty.message}`);
      else if ((result.empty.score ?? 0) > 0) {
        result.warnings.push(`empty agent: scores ${result.empty.score} without doing anything; some tests pass on the untouched container.`);
      }
    }
  }
  return finish();
}

type StageRun = { run?: TestRunResult; error?: string; /** The tail of what the reference solution printed, shown when it does not score 1. */ solutionOutput?: string };

/** The task's verifier over a sandbox: Harbor's [verifier] env and user, and a container of its own in separate mode. */
function verify(task: Task, sandbox: Sandbox, provider: SandboxProvider, runId: string): Promise<TestRunResult> {
  return withVerifierSandbox(task, sandbox, provider, runId, (v) => runTests({ task, sandbox: v, ...verifierTestOptions(task) }));
}

/** A multi-step task's oracle: each step's solve.sh (at /solution) then that step's verifier, as Harbor's oracle runs steps. */
async function runStepsOracle(task: Task, sandbox: Sandbox, provider: SandboxProvider, runId: string, mode: 'policy' | 'script'): Promise<StageRun> {
  const outputs: string[] = [];
  const steps = await runHarborSteps(task, sandbox, provider, runId, async (stepTask) => {
    if (!stepTask.solution) return { error: `step ${stepTask.id} has no solution/solve.sh` };
    await installSolution(stepTask, sandbox);
    const ran = mode === 'policy' ? await runOraclePolicy(stepTask, sandbox) : await runSolution(stepTask, sandbox);
    if (ran.output) outputs.push(ran.output);
    return ran;
  });
  return { ...steps, solutionOutput: outputs.join('\n') };
}

/** Create a container from the task image (recording the build), run `body`, always close it. */
async function withSandbox(task: Task, options: ValidateOptions, result: TaskValidation, body: (sandbox: Sandbox, runId: string) => Promise<StageRun>): Promise<StageRun | undefined> {
  const runId = `validate-${task.id.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}-${randomBytes(3).toString('hex')}`;
  const buildStarted = Date.now();
  let sandbox: Sandbox;
  try {
    sandbox = await createTaskSandbox(task, { provider: options.provider!, runId, signal: options.signal });
  } catch (err) {
    result.build = { status: 'failed', message: errorMessage(err), durationMs: Date.now() - buildStarted };
    result.problems.push(`build: ${errorMessage(err).split('\n')[0]}`);
    return undefined;
  }
  if (result.build.status !== 'passed') {
    result.build = { status: 'passed', image: sandbox.info.image, substitutedFrom: sandbox.info.substitutedFrom, durationMs: Date.now() - buildStarted };
  }
  try {
    return await body(sandbox, runId);
  } catch (err) {
    return { error: errorMessage(err) };
  } finally {
    await sandbox.close().catch(() => undefined);
  }
}

/** solution.yaml entries with `block: false` (servers) need the script runner: the loop waits for every command. */
function oracleMode(task: Task, wanted: 'policy' | 'script'): 'policy' | 'script' {
  const entries = Array.isArray(task.extra.solutionYaml) ? task.extra.solutionYaml : [];
  const nonBlocking = entries.some((e: unknown) => typeof e === 'object' && e !== null && (e as { block?: unknown }).block === false);
  return wanted === 'policy' && !nonBlocking ? 'policy' : 'script';
}

/** The oracle policy through the agent loop: the same path as `tbrl run --policy oracle`. */
async function runOraclePolicy(task: Task, sandbox: Sandbox): Promise<{ error?: string; output?: string }> {
  const { turns } = oracleTurns(task);
  const result = await runAgentLoop({
    policy: createOraclePolicy(task),
    sandbox,
    task,
    systemPrompt: loadSystemPrompt().text,
    // One spare step: a finish the loop did not see would otherwise end as max-steps silently.
    limits: { maxSteps: turns.length + 1, maxTimeMs: Math.round(task.agentTimeoutSec * 1000) },
    trace: false,
  });
  if (result.endReason !== 'finished') {
    return { error: `the oracle run ended with '${result.endReason}' instead of finishing${result.endMessage ? `: ${result.endMessage.split('\n')[0]}` : ''}` };
  }
  return { output: solutionOutputOf(result) };
}

/**
 * Runs the reference solution the way Terminal-Bench's oracle agent does (the script in the task
 * image's working directory, bounded by the agent timeout). solution.yaml commands run one by one in
 * the persistent shell, as typed keystrokes would.
 */
async function runSolution(task: Task, sandbox: Sandbox): Promise<{ error?: string; output?: string }> {
  const timeoutMs = Math.round(task.agentTimeoutSec * 1000);
  const solution = task.solution!;
  if (solution.kind === 'commands') {
    // oracleTurns validates the commands the same way the oracle policy will run them.
    oracleTurns(task);
    const entries = Array.isArray(task.extra.solutionYaml) ? task.extra.solutionYaml : [];
    for (const [i, command] of solution.commands.entries()) {
      // `block: false` sends the keys without waiting (servers, watchers): run it in the background.
      const entry: unknown = entries[i];
      const background = typeof entry === 'object' && entry !== null && (entry as { block?: unknown }).block === false;
      const r = await sandbox.exec(command, { timeoutMs, background });
      if (r.timedOut) return { error: `solution.yaml command timed out after ${task.agentTimeoutSec}s: ${command.slice(0, 80)}` };
    }
    return {};
  }
  const script = await readFile(solution.path);
  const target = '/tmp/tbrl-oracle-solution.sh';
  await sandbox.writeFile(target, script, 0o755);
  const r = await sandbox.exec(`bash ${target}; __s=$?; rm -f ${target}; (exit $__s)`, { timeoutMs });
  if (r.timedOut) return { error: `the reference solution did not finish within the agent timeout (${task.agentTimeoutSec}s)` };
  if (r.exitCode !== 0) return { error: `the reference solution exited with ${r.exitCode}: ${causeLines(r.output)}\n${r.output.slice(-1500)}` };
  return {};
}

function scoreStage(stageRun: StageRun, pass: (score: number) => boolean, failMessage: string, emptyAgent = false): ScoredStage {
  if (stageRun.error) return { status: 'failed', message: stageRun.error };
  const run = stageRun.run!;
  const base = { durationMs: run.durationMs };
  if (run.error) {
    // A verifier that crashed before reporting proves nothing about the work: counting it as "the
    // empty agent fails" would pass a task whose tests cannot run here (e.g. they fetch uv offline).
    const outcome = verifierError(run.error);
    const check = emptyAgent ? 'that an agent doing nothing fails' : 'the reference solution';
    return { ...base, status: 'failed', outcome: outcome.class, message: `verifier error, so ${check} could not be checked: ${outcome.cause}${emptyAgent ? '' : whyNotOne(stageRun)}`, logTail: run.error.logTail };
  }
  const score = run.tests ?? 0;
  if (pass(score)) return { ...base, status: 'passed', score };
  const failedTests = (run.outcomes ?? []).filter((o) => o.status !== 'passed').map((o) => o.name);
  return {
    ...base,
    status: 'failed',
    score,
    message: `${failMessage} (score ${score}${!emptyAgent && failedTests.length ? `; not passed: ${failedTests.slice(0, 6).join(', ')}` : ''})${run.metricsRule ? `; reward = ${run.metricsRule}` : ''}${emptyAgent ? '' : whyNotOne(stageRun)}`,
    logTail: run.log.slice(-2000),
  };
}

/** What the oracle's commands printed where they failed: the first thing to read when the reference does not score 1. */
function solutionOutputOf(result: LoopResult): string | undefined {
  const failed = result.steps.flatMap((s) => s.actions).filter((a) => a.kind === 'bash' && (a.exitCode ?? 0) !== 0);
  if (failed.length === 0) return undefined;
  return failed.map((a) => `$ ${String(a.input.cmd ?? '').split('\n')[0].slice(0, 120)} -> exit ${a.exitCode ?? 'timeout'}: ${a.observation.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^\[exit code|^<\/?[a-z_]+>$/.test(l)).slice(-3).join(' | ').slice(0, 300)}`).join('\n');
}

/** The last lines of a log that say why: error-looking lines first, else the tail. */
export function causeLines(log: string, max = 3): string {
  const lines = log.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^[-=_ ]+$/.test(l));
  const telling = lines.filter((l) => /error|fail|cannot|not found|no such|denied|refused|could not|resolve host|assert|traceback|exit/i.test(l));
  return (telling.length ? telling : lines).slice(-max).join(' | ').slice(0, 400);
}

/** Why the reference solution fell short: its own failing commands, else what the tests printed. */
function whyNotOne(stageRun: StageRun): string {
  const parts: string[] = [];
  if (stageRun.solutionOutput) parts.push(`the solution's failing command(s): ${stageRun.solutionOutput.split('\n').slice(0, 3).join('; ')}`);
  else if (stageRun.run && !stageRun.run.error) parts.push(`test output: ${causeLines(stageRun.run.log)}`);
  return parts.length ? `. Why: ${parts.join('; ')}` : '';
}
