// Runs the suites with node's built-in test runner (TypeScript through tsx), then the after-suite
// checks (no leaked containers), and prints one closing line that counts both runs.
// Usage: node scripts/test.mjs [unit|integration|e2e|all]   (default: all but e2e until it exists)
import { spawnSync } from 'node:child_process';
import { readdirSync, existsSync, readFileSync, mkdtempSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

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

function runFiles(label, files, concurrency) {
  if (files.length === 0) return;
  const tap = join(scratch, `${label}.tap`);
  console.log(`\n=== ${label}: ${files.length} files ===`);
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files],
    { stdio: 'inherit', env: { ...process.env, TBRL_TEST: '1' } },
  );
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const count = (k) => Number((text.match(new RegExp(`^# ${k} (\\d+)$`, 'm')) ?? [])[1] ?? 0);
  passed += count('pass');
  failed += count('fail') + count('cancelled');
  if (r.status !== 0) failedRuns++;
}

for (const s of suites) {
  // Integration tests share one Docker daemon on a 2-core machine: two files at a time is the sweet spot.
  runFiles(s, testFiles(join('test', s)), s === 'unit' ? 4 : 2);
}
if (suites.includes('integration')) runFiles('after-suite', testFiles('test/after-suite'), 1);

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || failedRuns > 0 ? 1 : 0);
