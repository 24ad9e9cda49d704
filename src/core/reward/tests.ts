import { access, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { ExecResult, Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { CommandTrace, VerifierTrace } from '../trace/types';
import type { TestOutcome } from '../trajectory/schema';
import { toVerifierTrace } from '../trace/traced-sandbox';
import { tarOf } from './archive';
import { parsePytestOutput } from './pytest-summary';
import { scoreTests } from './weights';

/**
 * The verifier run: after the agent ends, copy the task's tests into the container and run them
 * in the persistent shell with tracing on (the files, ports and processes they inspect are
 * DepGPO's resource set E). Every way this can go wrong is a typed outcome with the log tail.
 */
export type TestErrorKind =
  /** The run exceeded the task's test timeout and was killed. */
  | 'timeout'
  /** Non-zero exit and no pytest summary: the runner itself broke (missing pytest, syntax error, ...). */
  | 'crash'
  /** Exit 0 but no pytest short summary to read (run-tests.sh must call pytest with -rA). */
  | 'no-summary'
  /** A summary with no test in it. */
  | 'no-tests'
  /** Harbor: tests/test.sh wrote neither /logs/verifier/reward.txt nor reward.json. */
  | 'no-reward-file'
  | 'bad-reward-file'
  /** The task is broken (weights that name no test, no runner): not the agent's doing. */
  | 'task-error'
  /** Copying the tests in or talking to the container failed. */
  | 'sandbox-error';

/** Outcomes caused by the task or the harness, not by the agent: training should drop the sample. */
export const TASK_ERROR_KINDS: readonly TestErrorKind[] = ['task-error', 'sandbox-error'];

export interface TestError { kind: TestErrorKind; message: string; logTail: string }

export interface TestRunResult {
  /** Weighted score in [0,1]; undefined when `error` is set. */
  tests?: number;
  outcomes?: TestOutcome[];
  error?: TestError;
  /** Exit code of the runner (null when killed by the timeout). */
  exitCode?: number | null;
  durationMs: number;
  /** The test run's output (capped). */
  log: string;
  /** What the test run inspected, from the traced exec; absent when tracing was unavailable. */
  verifierTrace?: VerifierTrace;
  /** The raw command trace, for callers that want line-level detail of the verifier's own writes. */
  commandTrace?: CommandTrace;
  /** Files found in /logs/verifier before the verifier ran (planted by the agent): deleted unread. */
  discardedBeforeVerification?: string[];
}

export interface RunTestsOptions {
  task: Task;
  sandbox: Sandbox;
  /** Where tests are copied (Terminal-Bench and Harbor both use /tests). */
  testDir?: string;
  /** Override the task's test timeout. */
  timeoutMs?: number;
  /** Output kept from the run; the pytest summary is at the end, so the tail matters most. */
  maxOutputBytes?: number;
  logTailChars?: number;
}

export const HARBOR_REWARD_DIR = '/logs/verifier';
const DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024;
const DEFAULT_TAIL = 4000;

const tail = (text: string, n: number) => (text.length > n ? `...${text.slice(-n)}` : text);
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * E as DepGPO needs it: what the test run inspected. The tests' own files (/tests, the Harbor log
 * dir) are the verifier's, not the agent's: an agent that wrote /tests/conftest.py before it was
 * replaced must not get credit for "producing" what the verifier read there.
 */
export function verifierTraceOf(trace: CommandTrace, ownDirs: string[]): VerifierTrace {
  const own = (p: string) => ownDirs.some((d) => p === d || p.startsWith(`${d.replace(/\/$/, '')}/`));
  const e = toVerifierTrace(trace);
  return { ...e, reads: [...new Set(e.reads.filter((p) => !own(p)))], writes: [...new Set(e.writes.filter((p) => !own(p)))] };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Copies the tests in: a fresh /tests, so nothing the agent left there (a conftest.py) can steer the run. */
async function installTests(task: Task, sandbox: Sandbox, testDir: string): Promise<{ script: string; discarded: string[] } | TestError> {
  const extra = [];
  let script: string;
  if (task.tests.kind === 'harbor-reward') {
    script = `${testDir}/${basename(task.tests.runner)}`;
    if (!(await exists(task.tests.runner))) {
      return { kind: 'task-error', message: `Harbor task ${task.id} has no ${task.tests.runner}. Fix: add tests/test.sh that writes ${HARBOR_REWARD_DIR}/reward.txt.`, logTail: '' };
    }
  } else {
    script = `${testDir}/run-tests.sh`;
    if (await exists(task.tests.runner)) extra.push({ name: 'run-tests.sh', content: await readFile(task.tests.runner), mode: 0o755 });
    else if (task.tests.inlineRunner) extra.push({ name: 'run-tests.sh', content: task.tests.inlineRunner, mode: 0o755 });
    else return { kind: 'task-error', message: `Task ${task.id} has no ${task.tests.runner}. Fix: add run-tests.sh that runs pytest with -rA on $TEST_DIR.`, logTail: '' };
  }
  const testsDirExists = await exists(task.tests.dir);
  const discarded: string[] = [];
  try {
    // Anything in the reward directory before the verifier runs was planted: listed (for the flag) and deleted unread.
    const prep = await sandbox.execArgv(['sh', '-c', `find ${HARBOR_REWARD_DIR} -mindepth 1 -maxdepth 2 2>/dev/null | head -n 50; rm -rf -- ${shq(testDir)} && mkdir -p ${shq(testDir)} ${HARBOR_REWARD_DIR} && find ${HARBOR_REWARD_DIR} -mindepth 1 -delete`], { timeoutMs: 30_000 });
    if (prep.exitCode !== 0) return { kind: 'sandbox-error', message: `could not prepare ${testDir} in the container (exit ${prep.exitCode})`, logTail: tail(prep.output, DEFAULT_TAIL) };
    discarded.push(...prep.output.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(`${HARBOR_REWARD_DIR}/`)));
    await sandbox.putArchive(await tarOf(testsDirExists ? task.tests.dir : undefined, extra), testDir);
  } catch (err) {
    return { kind: 'sandbox-error', message: `could not copy the tests into the container: ${errorMessage(err)}`, logTail: '' };
  }
  return { script, discarded };
}

/**
 * The test run starts from the container's own state, like Terminal-Bench's fresh test session:
 * the environment of PID 1 (the image's ENV), its WORKDIR, no functions or aliases. It still runs
 * inside the persistent shell (that is what the tracer follows), so the agent's shell state has to
 * be shed first: an exported PYTEST_ADDOPTS or PYTHONPATH, an activated venv, or a function named
 * `bash` would otherwise decide the verdict. POSIXLY_CORRECT (an assignment, which no function can
 * shadow) makes `unset` and `exec` the special builtins; `exec -c` then drops the environment.
 * A shell that refuses posix mode fails the run (a `:?` expansion, again no command lookup).
 */
function runCommand(script: string, testDir: string): string {
  const clean = [
    `while IFS= read -r -d '' kv; do export "$kv" 2>/dev/null; done < /proc/1/environ`,
    'cd "$(readlink /proc/1/cwd 2>/dev/null || echo /)" 2>/dev/null || cd /',
    `export TEST_DIR=${shq(testDir)}`,
    `exec bash ${shq(script)}`,
  ].join('\n');
  return [
    '( POSIXLY_CORRECT=1',
    'case ":$SHELLOPTS:" in *:posix:*) ;; *) __tbrl=${__tbrl_verifier:?the shell refused posix mode, so its state could not be shed before the tests} ;; esac',
    'unset -f exec',
    `exec -c /bin/bash --noprofile --norc -c ${shq(clean)} ) 2>&1`,
  ].join('\n');
}

export async function runTests(options: RunTestsOptions): Promise<TestRunResult> {
  const { task, sandbox } = options;
  const testDir = options.testDir ?? '/tests';
  const tailChars = options.logTailChars ?? DEFAULT_TAIL;
  const started = Date.now();

  const installed = await installTests(task, sandbox, testDir);
  if ('kind' in installed) return { error: installed, durationMs: Date.now() - started, log: installed.logTail };

  const timeoutMs = options.timeoutMs ?? Math.round((task.testTimeoutSec > 0 ? task.testTimeoutSec : 180) * 1000);
  let exec: ExecResult;
  try {
    exec = await sandbox.exec(runCommand(installed.script, testDir), { timeoutMs, trace: true, maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT });
  } catch (err) {
    return { error: { kind: 'sandbox-error', message: `the test run could not be executed: ${errorMessage(err)}`, logTail: '' }, durationMs: Date.now() - started, log: '' };
  }
  const base: TestRunResult = {
    exitCode: exec.exitCode,
    durationMs: exec.durationMs,
    log: exec.output,
    verifierTrace: exec.trace ? verifierTraceOf(exec.trace, [testDir, HARBOR_REWARD_DIR]) : undefined,
    commandTrace: exec.trace,
    ...(installed.discarded.length ? { discardedBeforeVerification: installed.discarded } : {}),
  };
  const logTail = tail(exec.output, tailChars);

  if (exec.timedOut) {
    return { ...base, error: { kind: 'timeout', message: `the tests did not finish within the task's test timeout (${timeoutMs / 1000}s) and were killed`, logTail } };
  }
  if (task.tests.kind === 'harbor-reward') return { ...base, ...(await readHarborReward(sandbox, exec, logTail)) };
  return { ...base, ...scorePytest(task, exec, logTail) };
}

function scorePytest(task: Task, exec: ExecResult, logTail: string): Pick<TestRunResult, 'tests' | 'outcomes' | 'error'> {
  const parsed = parsePytestOutput(exec.output);
  if (parsed.results.length === 0) {
    if (exec.exitCode !== 0 && !parsed.summaryFound && !parsed.finalLineFound) {
      return { error: { kind: 'crash', message: `the test runner exited with ${exec.exitCode} before pytest printed a summary`, logTail } };
    }
    if (!parsed.summaryFound) {
      return { error: { kind: 'no-summary', message: 'the test output has no pytest short test summary (run-tests.sh must run pytest with -rA)', logTail } };
    }
    return { error: { kind: 'no-tests', message: 'pytest printed a summary with no test results in it (no tests were collected)', logTail } };
  }
  try {
    const { score, outcomes } = scoreTests(parsed.results, task.testWeights);
    return { tests: score, outcomes };
  } catch (err) {
    if (err instanceof TbrlError) return { error: { kind: 'task-error', message: `[${err.code}] ${err.message}`, logTail } };
    throw err;
  }
}

/** Harbor's contract: reward.txt holds one float; otherwise reward.json holds {"reward": x} (or one named score). */
async function readHarborReward(sandbox: Sandbox, exec: ExecResult, logTail: string): Promise<Pick<TestRunResult, 'tests' | 'outcomes' | 'error'>> {
  const read = async (name: string) => {
    try {
      return (await sandbox.readFile(`${HARBOR_REWARD_DIR}/${name}`)).toString('utf8');
    } catch {
      return undefined;
    }
  };
  const bad = (message: string) => ({ error: { kind: 'bad-reward-file' as const, message, logTail } });
  const inRange = (x: number, from: string) =>
    Number.isFinite(x) && x >= 0 && x <= 1
      ? { tests: Math.round(x * 1e12) / 1e12, outcomes: [{ name: from, status: x >= 1 ? 'passed' as const : 'failed' as const, weight: 1 }] }
      : bad(`${from} holds ${x}, which is not a reward in [0, 1]`);

  const txt = await read('reward.txt');
  if (txt !== undefined) {
    const value = txt.trim();
    if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(value)) return bad(`${HARBOR_REWARD_DIR}/reward.txt is not a number: ${JSON.stringify(value.slice(0, 80))}`);
    return inRange(Number(value), 'reward.txt');
  }
  const json = await read('reward.json');
  if (json !== undefined) {
    let data: unknown;
    try {
      data = JSON.parse(json);
    } catch (err) {
      return bad(`${HARBOR_REWARD_DIR}/reward.json is not JSON: ${errorMessage(err)}`);
    }
    if (typeof data === 'number') return inRange(data, 'reward.json');
    if (data && typeof data === 'object' && !Array.isArray(data)) {
      const entries = Object.entries(data as Record<string, unknown>).filter(([, v]) => typeof v === 'number');
      const chosen = entries.find(([k]) => k === 'reward') ?? (entries.length === 1 ? entries[0] : undefined);
      if (chosen) return inRange(chosen[1] as number, `reward.json:${chosen[0]}`);
      return bad(`${HARBOR_REWARD_DIR}/reward.json has no "reward" key and ${entries.length} numeric keys (${entries.map(([k]) => k).join(', ') || 'none'}); write {"reward": <0..1>}`);
    }
    return bad(`${HARBOR_REWARD_DIR}/reward.json must be an object like {"reward": 1.0}`);
  }
  return { error: { kind: exec.exitCode === 0 ? 'no-reward-file' : 'crash', message: `tests/test.sh exited with ${exec.exitCode} and wrote neither ${HARBOR_REWARD_DIR}/reward.txt nor reward.json`, logTail } };
}
