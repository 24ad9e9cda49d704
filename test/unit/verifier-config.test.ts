import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseVerifierMode, verifierConfigFrom } from '../../src/core/verifier/config';
import { TbrlError } from '../../src/core/errors';

const gen = { baseUrl: 'http://gen:8000/v1', model: 'qwen', apiKey: 'sk-gen', contextTokens: 32000 };

test('modes parse, unknown modes name the valid ones', () => {
  assert.equal(parseVerifierMode('Pairwise'), 'pairwise');
  assert.equal(parseVerifierMode('decision'), 'decision-only');
  assert.throws(() => parseVerifierMode('best'), (e: TbrlError) => e.code === 'verifier-config' && /listwise, pointwise, pairwise, decision-only/.test(e.fix ?? ''));
});

test('verifier endpoint defaults to the generator; a different server never gets the generator key', () => {
  const same = verifierConfigFrom({ mode: 'listwise' }, gen, {});
  assert.deepEqual([same.endpoint.baseUrl, same.endpoint.model, same.endpoint.apiKey, same.endpoint.contextTokens], ['http://gen:8000/v1', 'qwen', 'sk-gen', 32000]);
  const other = verifierConfigFrom({ mode: 'pairwise' }, gen, { TBRL_VERIFIER_BASE_URL: 'http://ver:9000/v1', TBRL_VERIFIER_MODEL: 'judge', TBRL_VERIFIER_TOKEN_BUDGET: '5000' });
  assert.deepEqual([other.endpoint.baseUrl, other.endpoint.model, other.endpoint.apiKey, other.tokenBudget], ['http://ver:9000/v1', 'judge', undefined, 5000]);
  assert.equal(verifierConfigFrom({ mode: 'pairwise', baseUrl: 'http://ver/v1', apiKey: 'k2' }, gen, {}).endpoint.apiKey, 'k2');
  assert.throws(() => verifierConfigFrom({ mode: 'pairwise' }, gen, { TBRL_VERIFIER_TOKEN_BUDGET: 'lots' }), (e: TbrlError) => e.code === 'verifier-config');
});
