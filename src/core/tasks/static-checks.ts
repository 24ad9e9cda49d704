import { readdir, readFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { Task } from './model';
import { parse as parseYaml } from 'yaml';
import { nameForms } from '../reward/weights';
import { checkHarbor, type HarborStaticInput } from './static-checks-harbor';
import { taskFormat } from './formats';

/** One problem a static check found. Errors make a task invalid; warnings are worth a look. */
export interface Finding {
  check: 'solution-leak' | 'tests-in-image' | 'weights' | 'timeouts' | 'tests' | 'environment';
  severity: 'error' | 'warning';
  message: string;
  file?: string;
  line?: number;
}

export interface SourceText {
  /** Path shown in findings (relative to the task directory). */
  path: string;
  content: string;
}

/** Everything the static checks look at, read once so the checks themselves are pure. */
export interface StaticInput {
  agentTimeoutSec: number;
  testTimeoutSec: number;
  testWeights?: Record<string, number>;
  testsKind: Task['tests']['kind'];
  dockerfile?: SourceText;
  /** tests/** files plus the runner (run-tests.sh or tests/test.sh). */
  testFiles: SourceText[];
  /** Base names of the reference solution's files (solution.sh, solve.sh, ...). */
  solutionNames: string[];
  /** docker-compose.yaml of a Terminal-Bench task, when it has one. */
  compose?: SourceText;
  /** Harbor tasks: what task.toml asks of the runtime. */
  harbor?: HarborStaticInput;
}

export const TIMEOUT_LIMITS = { minAgentSec: 10, maxAgentSec: 24 * 3600, minTestSec: 5, maxTestSec: 3 * 3600 };
const WEIGHT_SUM_TOLERANCE = 1e-6;

export function runStaticChecks(input: StaticInput): Finding[] {
  return [...checkSolutionLeaks(input), ...checkTestsInImage(input), ...checkWeights(input), ...checkTimeouts(input), ...checkCompose(input), ...(input.harbor ? checkHarbor(input.harbor) : [])];
}

/** A reference to the oracle lets an agent (or the tests) lean on the answer instead of the work. */
export function checkSolutionLeaks(input: StaticInput): Finding[] {
  const names = [...new Set([...input.solutionNames, 'solution.sh', 'solution.yaml', 'solve.sh'])];
  const patterns = [
    // The bare name (or ./name): a path like /app/solution.sh is the agent's own file, not the oracle.
    ...names.map((n) => new RegExp(`(^|[\\s"'=:(])(\\./)?${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`)),
    // Harbor mounts the oracle at /solution; Terminal-Bench's oracle agent copies solution.sh in.
    /(^|[\s"'=:(])\/(solution|oracle)(\/|\b)/,
    /^\s*(COPY|ADD)\s+(--\S+\s+)*\.?\/?solution\b/i,
  ];
  const findings: Finding[] = [];
  const sources = [...(input.dockerfile ? [input.dockerfile] : []), ...input.testFiles];
  for (const source of sources) {
    source.content.split('\n').forEach((text, i) => {
      if (/^\s*#/.test(text) && !/^\s*(COPY|ADD)/i.test(text)) return;
      if (patterns.some((p) => p.test(text))) {
        findings.push({
          check: 'solution-leak',
          severity: 'error',
          file: source.path,
          line: i + 1,
          message: `${source.path}:${i + 1} references the reference solution (${text.trim().slice(0, 80)}). Tests and the image must not see the oracle; remove the reference.`,
        });
      }
    });
  }
  return findings;
}

/** Tests baked into the image are visible to the agent, which can read the expected answers. */
export function checkTestsInImage(input: StaticInput): Finding[] {
  if (!input.dockerfile) return [];
  const findings: Finding[] = [];
  input.dockerfile.content.split('\n').forEach((text, i) => {
    if (/^\s*(COPY|ADD)\s+(--\S+\s+)*\.?\/?(tests|test_outputs\.py|run-tests\.sh|test_weights\.json)\b/i.test(text)) {
      findings.push({
        check: 'tests-in-image',
        severity: 'error',
        file: input.dockerfile!.path,
        line: i + 1,
        message: `${input.dockerfile!.path}:${i + 1} copies the tests into the image (${text.trim()}); the verifier copies them in after the agent finishes. Remove this line.`,
      });
    }
  });
  return findings;
}

/**
 * Whether a test script runs a check of its own, beyond set-up: any command left once comments,
 * shell options, cd/export/echo and tool installs (pip, uv, apt, curl | sh) are set aside.
 */
export function scriptRunsTests(script: string): boolean {
  const setup = /^(set|cd|pushd|popd|export|source|\.|echo|printf|mkdir|true|exit|fi|then|else|done|do|esac|\}|\{)\b|^(if|for|while)\b.*\b(then|do)\s*$|^[A-Za-z_][A-Za-z0-9_]*=\S*$/;
  const install = /\b(pip3?|uv|apt-get|apt|apk|yum|dnf|npm|conda)\s+(-\S+\s+)*(install|add|sync|venv|update|init)\b|astral\.sh|\bcurl\b.*\|\s*(ba)?sh|\bwget\b|\bsource\b.*env/;
  return script
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
    .some((l) => l !== '' && !setup.test(l) && !install.test(l));
}

/** `def test_*` functions (and methods) of pytest files, in file order. */
export function pytestFunctionNames(source: string): string[] {
  const names: string[] = [];
  for (const m of source.matchAll(/^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(/gm)) names.push(m[1]);
  return names;
}

export function checkWeights(input: StaticInput): Finding[] {
  const pyFiles = input.testFiles.filter((f) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(f.path));
  const tests = [...new Set(pyFiles.flatMap((f) => pytestFunctionNames(f.content)))];
  const findings: Finding[] = [];
  // Inline tests (SWE-bench style: run-tests.sh applies a test patch, then runs pytest) have no
  // test file to find: a task has tests when its test script runs something.
  const runner = input.testFiles.find((f) => /(^|\/)(run-tests|test)\.sh$/.test(f.path));
  if (input.testsKind === 'pytest-summary' && tests.length === 0 && !(runner && scriptRunsTests(runner.content))) {
    findings.push({ check: 'tests', severity: 'error', message: 'no pytest test functions (def test_...) found under tests/ and the test script runs no test of its own; the verifier would score nothing. Add tests/test_outputs.py.' });
  }
  const weights = input.testWeights;
  if (!weights) return findings;
  const file = 'test_weights.json';
  if (tests.length > 0) {
    const known = new Set(tests.flatMap((t) => nameForms(t)));
    const unmatched = Object.keys(weights).filter((k) => !known.has(k));
    for (const key of unmatched) {
      findings.push({
        check: 'weights',
        severity: 'error',
        file,
        message: `weight '${key}' names no test function (tests: ${tests.join(', ')}). Rename the key to the test's function name.`,
      });
    }
    const weighted = new Set(Object.keys(weights));
    for (const test of tests) {
      if (!nameForms(test).some((f) => weighted.has(f))) {
        findings.push({ check: 'weights', severity: 'warning', file, message: `test '${test}' has no weight, so passing it earns nothing. Give it a weight or remove it.` });
      }
    }
  }
  const sum = Object.values(weights).reduce((a, b) => a + b, 0);
  if (Math.abs(sum - 1) > WEIGHT_SUM_TOLERANCE) {
    findings.push({ check: 'weights', severity: 'error', file, message: `weights sum to ${+sum.toFixed(6)}, not 1. Scale them so they add up to 1.` });
  }
  return findings;
}

export function checkTimeouts(input: StaticInput): Finding[] {
  const findings: Finding[] = [];
  const L = TIMEOUT_LIMITS;
  const check = (what: string, value: number, min: number, max: number) => {
    if (!Number.isFinite(value) || value <= 0) {
      findings.push({ check: 'timeouts', severity: 'error', message: `${what} is ${value}; it must be a positive number of seconds.` });
    } else if (value < min) {
      findings.push({ check: 'timeouts', severity: 'warning', message: `${what} is ${value}s, shorter than ${min}s: even a correct run is likely to be cut off.` });
    } else if (value > max) {
      findings.push({ check: 'timeouts', severity: 'error', message: `${what} is ${value}s, longer than ${max}s: a stuck run would hold a container that long. Lower it.` });
    }
  };
  check('the agent timeout', input.agentTimeoutSec, L.minAgentSec, L.maxAgentSec);
  check('the test timeout', input.testTimeoutSec, L.minTestSec, L.maxTestSec);
  return findings;
}

/** tbrl runs one container per task: a compose file's other services (databases, servers) do not start. */
export function checkCompose(input: StaticInput): Finding[] {
  if (!input.compose) return [];
  let services: unknown;
  try {
    services = (parseYaml(input.compose.content) as { services?: unknown } | null)?.services;
  } catch {
    return [{ check: 'environment', severity: 'warning', file: input.compose.path, message: `${input.compose.path} is not valid YAML; tbrl builds the task's Dockerfile and ignores it.` }];
  }
  const others = typeof services === 'object' && services !== null ? Object.keys(services).filter((s) => s !== 'client') : [];
  if (others.length === 0) return [];
  return [{
    check: 'environment',
    severity: 'warning',
    file: input.compose.path,
    message: `${input.compose.path} defines services besides client (${others.join(', ')}); tbrl runs only the client container, so tests that need them will fail.`,
  }];
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

async function text(path: string, root: string): Promise<SourceText | undefined> {
  const content = await readFile(path, 'utf8').catch(() => undefined);
  return content === undefined ? undefined : { path: relative(root, path) || basename(path), content };
}

/** Read what the checks need from a loaded task. */
export async function collectStaticInput(task: Task): Promise<StaticInput> {
  const testPaths = await listFiles(task.tests.dir);
  if (!testPaths.includes(task.tests.runner)) testPaths.push(task.tests.runner);
  // Files tbrl's converters stash (the original run-tests.sh) are scanned like any test file.
  const testFiles = (await Promise.all(testPaths.filter((p) => !p.endsWith('test_weights.json')).map((p) => text(p, task.dir)))).filter(
    (f): f is SourceText => f !== undefined,
  );
  const dockerfile = 'context' in task.environment ? await text(join(task.environment.context, task.environment.dockerfile), task.dir) : undefined;
  const solutionNames = task.solution?.kind === 'script' ? [basename(task.solution.path)] : task.solution ? ['solution.yaml'] : [];
  const composeFile = taskFormat(task.format)?.staticCompose;
  const compose = composeFile !== undefined ? await text(join(task.dir, composeFile), task.dir) : undefined;
  return {
    agentTimeoutSec: task.agentTimeoutSec,
    testTimeoutSec: task.testTimeoutSec,
    testWeights: task.testWeights,
    testsKind: task.tests.kind,
    dockerfile,
    testFiles,
    solutionNames,
    compose,
    ...(task.harbor ? { harbor: { refusals: task.harbor.refusals, ignored: task.harbor.ignored, sidecars: task.harbor.sidecars.map((s) => s.name), ...(task.harbor.composeFile ? { composeFile: relative(task.dir, task.harbor.composeFile) } : {}), runner: testFiles.find((f) => join(task.dir, f.path) === task.tests.runner) } } : {}),
  };
}

export async function staticCheckTask(task: Task): Promise<Finding[]> {
  return runStaticChecks(await collectStaticInput(task));
}
