import { randomBytes } from 'node:crypto';
import { access, readFile, readdir } from 'node:fs/promises';
import { basename, relative, sep } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { ExecResult, Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { CommandTrace, VerifierTrace } from '../trace/types';
import type { TestOutcome } from '../trajectory/schema';
import { toVerifierTrace } from '../trace/traced-sandbox';
import { tarOf } from './archive';
import { parsePytestOutput, taskRelativeNodeId } from './pytest-summary';
import { taskFormat } from '../tasks/formats';
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
  /** Harbor reward.json: every numeric metric the verifier wrote, kept beside the reward. */
  metrics?: Record<string, number>;
  /** Which metric (or rule over them) became `tests`, in words, for the report. */
  metricsRule?: string;
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
  /** Harbor [verifier].env (already resolved): exported for the test run only. */
  env?: Record<string, string>;
  /** Harbor [verifier].user when it differs from the agent's: the run goes through a docker exec as that user (untraced). */
  user?: string;
  /** Harbor [[steps]]: directories copied into /tests in order, later ones overriding (the task's tests/, then the step's). */
  testsDirs?: string[];
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
async function installTests(task: Task, sandbox: Sandbox, testDir: string, layers?: string[], readStart = false): Promise<{ script: string; discarded: string[]; start?: ContainerStart } | TestError> {
  const extra = [];
  let script: string;
  if (layers) {
    script = `${testDir}/test.sh`;
    const present = await Promise.all(layers.map((d) => exists(`${d}/test.sh`)));
    if (!present.some(Boolean)) return { kind: 'task-error', message: `Harbor task ${task.id}: none of ${layers.join(', ')} has a test.sh. Fix: add steps/<name>/tests/test.sh or tests/test.sh.`, logTail: '' };
  } else if (task.tests.kind === 'harbor-reward') {
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
  const harness = taskFormat(task.format)?.verifierScripts;
  if (harness && extra.length) {
    const runner = extra[0].content.toString();
    const shipped = new Set(testsDirExists ? await readdir(task.tests.dir) : []);
    extra.push(...harness(runner, (name) => shipped.has(name)));
  }
  const discarded: string[] = [];
  let start: ContainerStart | undefined;
  try {
    // As root, whoever the image's USER is: Harbor's /logs/verifier is a mount any verifier user can write.
    // Anything in the reward directory before the verifier runs was planted: listed (for the flag) and deleted unread.
    const prepare = `find ${HARBOR_REWARD_DIR} -mindepth 1 -maxdepth 2 2>/dev/null | head -n 50; rm -rf -- ${shq(testDir)} && mkdir -p ${shq(testDir)} ${HARBOR_REWARD_DIR} && chmod 777 ${HARBOR_REWARD_DIR} && find ${HARBOR_REWARD_DIR} -mindepth 1 -delete`;
    // PID 1's environment and WORKDIR, when not known yet, come in the same exec (each exec costs the daemon a
    // runc exec): they are printed first and end at a line with a nonce that no environment can contain.
    const nonce = readStart ? `tbrl-start-${randomBytes(12).toString('hex')}` : undefined;
    const prep = await sandbox.execArgv(['sh', '-c', nonce ? `${READ_CONTAINER_START}; printf '\\n%s %s\\n' ${nonce} "$?"; ${prepare}` : prepare], { timeoutMs: 30_000, user: '0' });
    let prepOutput = prep.output;
    if (nonce) {
      const m = new RegExp(`\n${nonce} (\\d+)\n`).exec(prep.output);
      if (m) {
        prepOutput = prep.output.slice(m.index + m[0].length);
        // A cut output may have lost part of the environment: the test run reads /proc/1 itself then, as when the read fails.
        if (m[1] === '0' && prep.droppedBytes === 0) start = parseContainerStart(prep.output.slice(0, m.index));
      }
    }
    if (prep.exitCode !== 0) return { kind: 'sandbox-error', message: `could not prepare ${testDir} in the container (exit ${prep.exitCode})`, logTail: tail(prepOutput, DEFAULT_TAIL) };
    discarded.push(...prepOutput.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(`${HARBOR_REWARD_DIR}/`)));
    if (layers) {
      for (const dir of layers) if (await exists(dir)) await sandbox.putArchive(await tarOf(dir), testDir);
    } else await sandbox.putArchive(await tarOf(testsDirExists ? task.tests.dir : undefined, extra), testDir);
  } catch (err) {
    return { kind: 'sandbox-error', message: `could not copy the tests into the container: ${errorMessage(err)}`, logTail: '' };
  }
  return { script, discarded, ...(start ? { start } : {}) };
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
function runCommand(script: string, testDir: string, env: Record<string, string> = {}, start?: ContainerStart): string {
  const clean = [
    ...(start
      ? [...start.env.map(([k, v]) => `export ${k}=${shq(v)}`), `cd ${shq(start.cwd)} 2>/dev/null || cd /`]
      : [`while IFS= read -r -d '' kv; do export "$kv" 2>/dev/null; done < /proc/1/environ`, 'cd "$(readlink /proc/1/cwd 2>/dev/null || echo /)" 2>/dev/null || cd /']),
    `export TEST_DIR=${shq(testDir)}`,
    ...Object.entries(env).map(([k, v]) => `export ${k}=${shq(v)}`),
    `exec bash ${shq(script)}`,
  ].join('\n');
  return [
    '( POSIXLY_CORRECT=1',
    'case ":$SHELLOPTS:" in *:posix:*) ;; *) __tbrl=${__tbrl_verifier:?the shell refused posix mode, so its state could not be shed before the tests} ;; esac',
    'unset -f exec',
    `exec -c /bin/bash --noprofile --norc -c ${shq(clean)} ) 2>&1`,
  ].join('\n');
}

/** PID 1's environment and working directory: the image's ENV and WORKDIR. */
interface ContainerStart { env: Array<[string, string]>; cwd: string }

/**
 * Read by an exec of its own, outside the persistent shell: the shell's commands run with one
 * capability less than the container's processes (sandbox/shell.ts), so the kernel refuses them
 * PID 1's /proc entries. The test preparation's exec (installTests) reads it too when it is not
 * known yet. Undefined when the read fails; the test run then reads /proc/1 itself.
 *
 * PID 1's initial environment and WORKDIR are the image's and survive a revived container, so one
 * read per sandbox serves every test run on it (a debugger session scores many times).
 */
const containerStarts = new WeakMap<RunTestsOptions['sandbox'], ContainerStart>();

const READ_CONTAINER_START = 'cat /proc/1/environ && printf "\\000" && readlink /proc/1/cwd';

function parseContainerStart(output: string): ContainerStart | undefined {
  const parts = output.split('\0');
  const cwd = (parts.pop() ?? '').trim();
  const env = parts.filter((kv) => kv.includes('=')).map((kv): [string, string] => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]).filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  return cwd.startsWith('/') ? { env, cwd } : undefined;
}

export async function runTests(options: RunTestsOptions): Promise<TestRunResult> {
  const { task, sandbox } = options;
  const testDir = options.testDir ?? '/tests';
  const tailChars = options.logTailChars ?? DEFAULT_TAIL;
  const started = Date.now();

  const known = containerStarts.get(sandbox);
  const installed = await installTests(task, sandbox, testDir, options.testsDirs, !known);
  if ('kind' in installed) return { error: installed, durationMs: Date.now() - started, log: installed.logTail };
  const start = known ?? installed.start;
  if (start) containerStarts.set(sandbox, start);

  const timeoutMs = options.timeoutMs ?? Math.round((task.testTimeoutSec > 0 ? task.testTimeoutSec : 180) * 1000);
  let exec: ExecResult;
  try {
    const command = runCommand(installed.script, testDir, options.env, start);
    exec = options.user !== undefined
      ? await sandbox.execArgv(['/bin/bash', '--noprofile', '--norc', '-c', command], { timeoutMs, maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT, user: options.user })
      : await sandbox.exec(command, { timeoutMs, trace: true, maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT });
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
  if (task.tests.kind === 'harbor-reward' || options.testsDirs) return { ...base, ...(await readHarborReward(sandbox, exec, logTail)) };
  return { ...base, ...scorePytest(task, exec, logTail, testDir) };
}

function scorePytest(task: Task, exec: ExecResult, logTail: string, testDir: string): Pick<TestRunResult, 'tests' | 'outcomes' | 'error'> {
  const parsed = parsePytestOutput(exec.output);
  const taskTestsDir = relative(task.dir, task.tests.dir).split(sep).join('/');
  const usable = taskTestsDir && !taskTestsDir.startsWith('..') ? taskTestsDir : 'tests';
  parsed.results = parsed.results.map((r) => ({ ...r, nodeId: taskRelativeNodeId(r.nodeId, testDir, usable) }));
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

/**
 * Harbor's contract: reward.txt holds one float; otherwise reward.json holds a flat map of numeric
 * metrics. Harbor's reward is its `reward` key, or the only key; for several metrics without a
 * `reward` key Harbor itself defines no scalar (its default mean metric refuses them), so tbrl takes
 * their mean and says so in `metricsRule`. Every metric is kept in `metrics`.
 */
export function harborRewardOf(metrics: Record<string, number>): { value: number; rule: string } | undefined {
  const keys = Object.keys(metrics);
  if (keys.length === 0) return undefined;
  if ('reward' in metrics) return { value: metrics.reward, rule: keys.length === 1 ? 'reward' : `the "reward" key (other metrics kept: ${keys.filter((k) => k !== 'reward').join(', ')})` };
  if (keys.length === 1) return { value: metrics[keys[0]], rule: `the only metric, "${keys[0]}"` };
  return { value: keys.reduce((a, k) => a + metrics[k], 0) / keys.length, rule: `mean of ${keys.length} metrics (${keys.join(', ')}): reward.json has no "reward" key, and Harbor defines no single reward for several metrics` };
}

async function readHarborReward(sandbox: Sandbox, exec: ExecResult, logTail: string): Promise<Pick<TestRunResult, 'tests' | 'outcomes' | 'error' | 'metrics' | 'metricsRule'>> {
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
      const metrics = Object.fromEntries(Object.entries(data as Record<string, unknown>).flatMap(([k, v]) => (typeof v === 'number' ? [[k, v]] : typeof v === 'boolean' ? [[k, v ? 1 : 0]] : [])));
      const chosen = harborRewardOf(metrics);
      if (!chosen) return bad(`${HARBOR_REWARD_DIR}/reward.json has no numeric metric; write {"reward": <0..1>} or several named metrics`);
      const outOfRange = Object.entries(metrics).filter(([, v]) => !(Number.isFinite(v) && v >= 0 && v <= 1));
      if (outOfRange.length > 0) return bad(`${HARBOR_REWARD_DIR}/reward.json: ${outOfRange.map(([k, v]) => `${k} = ${v}`).join(', ')} not in [0, 1]`);
      const scored = inRange(chosen.value, 'reward.json');
      if ('error' in scored) return scored;
      const outcomes = Object.entries(metrics).map(([name, v]) => ({ name: `reward.json:${name}`, status: v >= 1 ? 'passed' as const : 'failed' as const, weight: 1 / Object.keys(metrics).length }));
      return { tests: scored.tests, outcomes, metrics, metricsRule: chosen.rule };
    }
    return bad(`${HARBOR_REWARD_DIR}/reward.json must be an object like {"reward": 1.0}`);
  }
  return { error: { kind: exec.exitCode === 0 ? 'no-reward-file' : 'crash', message: `tests/test.sh exited with ${exec.exitCode} and wrote neither ${HARBOR_REWARD_DIR}/reward.txt nor reward.json`, logTail } };
}
