import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractStdoutValues } from '../../src/core/trace/stdout-values';

test('urls, absolute and relative paths', () => {
  const v = extractStdoutValues('Serving at http://localhost:8080/api?x=1. Wrote /app/out/result.json and ./build/app, see src/main.py, config.yaml\n');
  assert.ok(v.includes('http://localhost:8080/api?x=1'));
  assert.ok(v.includes('/app/out/result.json'));
  assert.ok(v.includes('./build/app'));
  assert.ok(v.includes('src/main.py'));
  assert.ok(v.includes('config.yaml'));
  assert.ok(!v.includes('/api'), 'a URL path is not a separate file path');
});

test('ports after hosts and in phrases, not times or line numbers', () => {
  const v = extractStdoutValues('Listening on 0.0.0.0:5000\nstarted server on port 7001\nat 12:30:45 main.py:12 failed\nredis at db.internal:6380\n');
  assert.ok(v.includes('5000'));
  assert.ok(v.includes('7001'));
  assert.ok(v.includes('6380'));
  assert.ok(!v.includes('30') && !v.includes('45') && !v.includes('12'));
});

test('ids: uuids, hex ids, pids in known phrases', () => {
  const v = extractStdoutValues('job 3f2a9c1e-8b7d-4c6e-9f01-23456789abcd queued\ncommit 9fceb02d0ae598e95dc970b74767f19372d61af8\ncontainer a1b2c3d4e5f6\nstarted with pid 4242\n[1] 777\nsum of 1234567 and deadbeef\n');
  assert.ok(v.includes('3f2a9c1e-8b7d-4c6e-9f01-23456789abcd'));
  assert.ok(v.includes('9fceb02d0ae598e95dc970b74767f19372d61af8'));
  assert.ok(v.includes('a1b2c3d4e5f6'));
  assert.ok(v.includes('4242'));
  assert.ok(v.includes('777'));
  assert.ok(!v.includes('1234567'), 'a plain number is not an id');
  assert.ok(!v.includes('deadbeef'), 'a word made of hex letters is not an id');
  assert.ok(!v.some((x) => x.startsWith('8b7d')), 'uuid parts are not separate ids');
});

test('values are deduplicated and bounded', () => {
  const many = Array.from({ length: 500 }, (_, i) => `/data/file${i % 200}.csv`).join('\n');
  const v = extractStdoutValues(many, 64);
  assert.equal(v.length, 64);
  assert.equal(new Set(v).size, 64);
  assert.equal(v[0], '/data/file0.csv');
});

test('plain prose yields nothing', () => {
  assert.deepEqual(extractStdoutValues('All tests passed. 3 of 3 ok, and/or nothing at 1.2/3 speed.\n'), []);
});
