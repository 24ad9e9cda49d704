// The studio's local dev clusters (scripts/ray.sh's head, the eval tests' and bench's cluster) read
// one settings file, scripts/ray-local.env: the shell's reading and the test helper's must agree, a
// variable the environment sets must win, and TBRL_RAY_QUIET=0 must leave Ray's defaults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { localRaySettings } from '../helpers/ray-cluster';

const RAY_SH = join(__dirname, '..', '..', 'scripts', 'ray.sh');

function shellSettings(env: Record<string, string>): Record<string, string> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(RAY_|REPORTER_|TBRL_RAY_QUIET|TBRL_RAY_DASHBOARD_MODULES)/.test(k)));
  const r = spawnSync(RAY_SH, ['env'], { encoding: 'utf8', env: { ...clean, ...env } });
  assert.equal(r.status, 0, r.stderr);
  return Object.fromEntries(r.stdout.trim().split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

test('ray.sh and the test helper apply the same settings from scripts/ray-local.env', () => {
  const helper = localRaySettings({});
  assert.equal(helper.RAY_USAGE_STATS_ENABLED, '0');
  assert.equal(helper.RAY_enable_metrics_collection, '0');
  assert.deepEqual(shellSettings({}), helper);
});

test('a variable already in the environment wins over the file, in both readers', () => {
  const env = { RAY_enable_metrics_collection: '1' };
  assert.equal('RAY_enable_metrics_collection' in localRaySettings(env), false);
  assert.equal(shellSettings(env).RAY_enable_metrics_collection, '1');
});

test("TBRL_RAY_QUIET=0 keeps Ray's defaults but for the usage stats", () => {
  assert.deepEqual(localRaySettings({ TBRL_RAY_QUIET: '0' }), { RAY_USAGE_STATS_ENABLED: '0' });
  assert.deepEqual(shellSettings({ TBRL_RAY_QUIET: '0' }), { RAY_USAGE_STATS_ENABLED: '0' });
});

test('a malformed line is named with the fix', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'ray-local-env-')), 'ray-local.env');
  writeFileSync(file, '# ok\nRAY_x=1\nRAY_y = 2\n');
  assert.throws(() => localRaySettings({}, file), /"RAY_y = 2" is not KEY=VALUE/);
});
