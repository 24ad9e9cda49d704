import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backendLabel, createBackend, JUDGE_BACKEND_KINDS, parseBackendConfig } from '../../src/core/reward/judge/backends';
import type { TbrlError } from '../../src/core/errors';

test('judge backend registry: every kind parses its own example, labels it and builds a backend; errors list every kind', () => {
  const kinds = JUDGE_BACKEND_KINDS.map((k) => k.kind);
  assert.equal(new Set(kinds).size, kinds.length);
  for (const k of JUDGE_BACKEND_KINDS) {
    const config = parseBackendConfig(JSON.parse(k.example), 'example');
    assert.equal(config.kind, k.kind);
    const label = backendLabel(config);
    assert.ok(label.startsWith(`${k.kind}:`), label);
    assert.equal(createBackend(config).label, label);
  }
  assert.throws(() => parseBackendConfig({ kind: 'carrier-pigeon' }, 'x.json'), (e: TbrlError) =>
    e.message.startsWith(`x.json: "kind" must be ${kinds.map((k) => `"${k}"`).join(' or ')}, got "carrier-pigeon"\n`)
    && JUDGE_BACKEND_KINDS.every((k) => e.fix!.includes(k.example)));
});
