// Runs the suites with node's built-in test runner (TypeScript through tsx), then the after-suite
// checks (no leaked containers), and prints one closing line that counts both runs.
// Usage: node scripts/test.mjs [unit|integration|e2e|chaos|all]   (default: all but e2e until it exists)
// `python` runs only the trainer-bridge pytest suite; `all` runs it too (its counts join the totals).
import { spawnSync } from 'node:child_process';
import { readdirSync, existsSync, readFileSync, mkdtempSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { tapFailures } from './tap-failures.mjs';

const which = process.argv[2] ?? 'all';
const suites = which === 'all' ? ['unit', 'integration', 'e2e'] : [which];

function testFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, String(f)))
    .filter((f) => f.endsWith('.test.ts') && statSync(f).isFile())
    .sort();
}

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-test-'));
let passed = 0;
let failed = 0;
let failedRuns = 0;
// What failed and why, repeated just above the closing line: CI keeps only the tail of the output.
const failures = [];

function runFiles(label, files, concurrency, env = {}) {
  if (files.length === 0) return;
  const tap = join(scratch, `${label}.tap`);
  console.log(`\n=== ${label}: ${files.length} files ===`);
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files],
    { stdio: 'inherit', env: { ...process.env, TBRL_TEST: '1', ...env } },
  );
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const count = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
  passed += count('pass');
  failed += count('fail') + count('cancelled');
  failures.push(...tapFailures(text).map((f) => ({ suite: label, ...f })));
  if (r.status !== 0) failedRuns++;
}

function printFailures() {
  if (failures.length === 0) return;
  console.log(`\n=== failures: ${failures.length} ===`);
  for (const f of failures) {
    const error = f.error.split('\n').slice(0, 20).join('\n').slice(0, 1500);
    const where = [f.location && `test at ${f.location}`, f.thrownAt && `thrown from ${f.thrownAt}`].filter(Boolean).join('\n  ');
    console.log(`✖ [${f.suite}] ${f.name}${where ? `\n  ${where}` : ''}\n  ${error.replace(/\n/g, '\n  ')}`);
  }
}

// The trainer tests submit jobs to a real local Ray head: one head for the whole integration run,
// started here (the test files start one only when run alone) and always stopped at the end.
const rayTests = suites.includes('integration') && testFiles('test/integration').some((f) => /[\\/]trainer[^\\/]*\.test\.ts$/.test(f));
if (rayTests) {
  const r = spawnSync('scripts/ray.sh', ['start'], { stdio: 'inherit' });
  if (r.status !== 0) failedRuns++;
}
try {
  for (const s of suites.filter((x) => x !== 'python' && x !== 'chaos')) {
    // Integration tests share one Docker daemon on a 2-core machine: two files at a time is the sweet spot.
    const files = testFiles(join('test', s));
    if (s === 'e2e' && files.length > 0) {
      // Every e2e file installs the same .vsix into its own code-server: package it once here.
      const pkg = spawnSync('npm', ['run', '-s', 'package'], { stdio: 'inherit' });
      if (pkg.status !== 0) { failedRuns++; continue; }
      runFiles(s, files, 1, { TBRL_E2E_REPACKAGE: '0' });
      continue;
    }
    runFiles(s, files, s === 'unit' ? 4 : 2);
  }
} finally {
  if (rayTests) spawnSync('scripts/ray.sh', ['stop'], { stdio: 'inherit' });
}
if (which === 'all' || which === 'python') runPytest();
// The chaos suite (issue 10) runs its own runner, which prints the table of what was tried; it goes
// after the integration files so its load and containment cases do not compete with them, and its
// counts join the one total below (its own closing line is prefixed "chaos:").
if (which === 'all' || which === 'chaos') runChaos();
if (suites.includes('integration')) runFiles('after-suite', testFiles('test/after-suite'), 1);

// trainer-bridge's pytest, with the venv scripts/setup.sh makes; its closing line
// ("== 12 passed, 1 failed in 3.2s ==") is added to the totals.
function runPytest() {
  // .venv/train (verl, torch) runs the verl and cpu-tiny tests too; without it they report as skipped.
  const python = ['.venv/train/bin/python', '.venv/ray/bin/python'].find((p) => existsSync(p)) ?? 'python3';
  console.log('\n=== python: trainer-bridge/tests ===');
  const r = spawnSync(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'trainer-bridge/tests'], { encoding: 'utf8', env: { ...process.env, TBRL_TEST: '1' } });
  process.stdout.write(r.stdout ?? '');
  process.stderr.write(r.stderr ?? '');
  const last = (r.stdout ?? '').trim().split('\n').pop() ?? '';
  const n = (k) => Number((last.match(new RegExp(`(\\d+) ${k}`)) ?? [])[1] ?? 0);
  passed += n('passed');
  failed += n('failed') + n('error');
  if (r.status !== 0) failedRuns++;
}

function runChaos() {
  const counts = join(scratch, 'chaos-counts.json');
  const r = spawnSync(process.execPath, ['scripts/chaos.mjs'], { stdio: 'inherit', env: { ...process.env, TBRL_CHAOS_EMBEDDED: counts } });
  const c = existsSync(counts) ? JSON.parse(readFileSync(counts, 'utf8')) : { passed: 0, failed: 1 };
  passed += c.passed;
  failed += c.failed;
  if (r.status !== 0) failedRuns++;
}

printFailures();
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || failedRuns > 0 ? 1 : 0);
