import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { resolveRunConfig } from '../../src/core/run/config';
import { loadSystemPrompt } from '../../src/core/agent/prompt';
import { TbrlError } from '../../src/core/errors';

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-cfg-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('no endpoint and no cached model: oracle, and the reason says so', () => {
  withDir((dir) => {
    const c = resolveRunConfig({}, { TBRL_MODEL_DIR: dir }, dir);
    assert.equal(c.policy, 'oracle');
    assert.match(c.policyReason, /no model endpoint configured.*local default model is not in the cache.*fetch-model\.sh.*oracle/);
    assert.equal(c.maxSteps, 50);
  });
});

test('no endpoint but the cached local model: the run serves it itself and says so; --policy oracle still wins', () => {
  withDir((dir) => {
    const model = join(dir, 'SmolLM2-135M-Instruct.Q4_1.gguf');
    writeFileSync(model, 'GGUF');
    const c = resolveRunConfig({ n: 4 }, { TBRL_MODEL_DIR: dir }, dir);
    assert.equal(c.policy, 'model');
    assert.deepEqual(c.model?.local, { modelPath: model });
    assert.equal(c.model?.n, 4);
    assert.ok(c.model?.maxTokens && c.model.contextTokens, 'a small model gets a bounded turn and context');
    assert.match(c.policyReason, /starting `tbrl serve` with the local default model .*SmolLM2.*--policy oracle/);
    assert.equal(resolveRunConfig({ policy: 'oracle' }, { TBRL_MODEL_DIR: dir }, dir).policy, 'oracle');
    assert.equal(resolveRunConfig({ baseUrl: 'http://h/v1', model: 'm' }, { TBRL_MODEL_DIR: dir }, dir).model?.local, undefined, 'a configured endpoint beats the local model');
  });
});

test('environment endpoint selects the model; options beat environment beat config file', () => {
  withDir((dir) => {
    mkdirSync(join(dir, '.tbrl'));
    writeFileSync(join(dir, '.tbrl', 'config.json'), JSON.stringify({ baseUrl: 'http://file/v1', model: 'file-model', n: 3, maxSteps: 7 }));
    const fromFile = resolveRunConfig({}, {}, dir);
    assert.equal(fromFile.policy, 'model');
    assert.deepEqual([fromFile.model?.baseUrl, fromFile.model?.model, fromFile.model?.n, fromFile.maxSteps], ['http://file/v1', 'file-model', 3, 7]);
    const fromEnv = resolveRunConfig({}, { OPENAI_BASE_URL: 'http://env/v1', TBRL_MODEL: 'env-model', OPENAI_API_KEY: 'k' }, dir);
    assert.deepEqual([fromEnv.model?.baseUrl, fromEnv.model?.model, fromEnv.model?.apiKey, fromEnv.model?.n], ['http://env/v1', 'env-model', 'k', 3]);
    const fromOptions = resolveRunConfig({ baseUrl: 'http://opt/v1', n: 2 }, { OPENAI_BASE_URL: 'http://env/v1' }, dir);
    assert.deepEqual([fromOptions.model?.baseUrl, fromOptions.model?.model, fromOptions.model?.n], ['http://opt/v1', 'file-model', 2]);
    assert.equal(resolveRunConfig({ policy: 'oracle' }, {}, dir).policy, 'oracle', '--policy oracle wins over a configured endpoint');
  });
});

test('bad configuration names the cause and the fix', () => {
  withDir((dir) => {
    const isErr = (code: string, re: RegExp) => (e: unknown) => e instanceof TbrlError && e.code === code && re.test(e.message);
    assert.throws(() => resolveRunConfig({ policy: 'model' }, { TBRL_MODEL_DIR: dir }, dir), isErr('config-missing', /--base-url/));
    assert.throws(() => resolveRunConfig({ baseUrl: 'http://x/v1' }, {}, dir), isErr('config-missing', /no model name[\s\S]*--model/));
    assert.throws(() => resolveRunConfig({ n: 0 }, {}, dir), isErr('config-invalid', /n must be/));
    assert.throws(() => resolveRunConfig({}, { TBRL_JUDGE_MODEL: 'j', TBRL_MODEL_DIR: dir }, dir), isErr('config-missing', /judge model \(j\)[\s\S]*--base-url/));
    assert.deepEqual(resolveRunConfig({ policy: 'oracle', judgeModel: 'j' }, { OPENAI_BASE_URL: 'http://e/v1' }, dir).judge, { baseUrl: 'http://e/v1', model: 'j', apiKey: undefined });
    mkdirSync(join(dir, '.tbrl'));
    writeFileSync(join(dir, '.tbrl', 'config.json'), '{"baseUrl": ');
    assert.throws(() => resolveRunConfig({}, {}, dir), isErr('config-invalid', /not valid JSON/));
    writeFileSync(join(dir, '.tbrl', 'config.json'), '{"base_url": "http://x"}');
    assert.throws(() => resolveRunConfig({}, {}, dir), isErr('config-invalid', /unknown key "base_url"/));
    writeFileSync(join(dir, '.tbrl', 'config.json'), '{"n": "4"}');
    assert.throws(() => resolveRunConfig({}, {}, dir), isErr('config-invalid', /"n" must be a number/));
  });
});

test('n > 1 without a verifier gets the listwise verifier (and says so); verifier none with n > 1 is refused with the fix', () => {
  withDir((dir) => {
    const four = resolveRunConfig({ baseUrl: 'http://h/v1', model: 'm', n: 4 }, {}, dir);
    assert.equal(four.verifier, 'listwise');
    assert.match(four.policyReason, /n=4, listwise verifier by default/);
    assert.equal(resolveRunConfig({ baseUrl: 'http://h/v1', model: 'm', n: 4, verifier: 'pairwise' }, {}, dir).verifier, 'pairwise');
    assert.equal(resolveRunConfig({ baseUrl: 'http://h/v1', model: 'm' }, {}, dir).verifier, undefined, 'n = 1: nothing to choose');
    const oracle = resolveRunConfig({ n: 4, policy: 'oracle' }, {}, dir);
    assert.equal(oracle.policy, 'oracle');
    assert.equal(oracle.verifier, undefined, 'the oracle ignores n');
    assert.throws(() => resolveRunConfig({ baseUrl: 'http://h/v1', model: 'm', n: 4, verifier: 'none' }, {}, dir), (e: unknown) => e instanceof TbrlError && /only the first/.test(e.message) && /--n 1/.test(e.fix ?? ''));
  });
});

test('promptVersion from .tbrl/config.json or TBRL_PROMPT_VERSION picks the system prompt a run uses (cpu-tiny trains with compact-v1)', () => {
  withDir((dir) => {
    assert.equal(resolveRunConfig({ policy: 'oracle' }, {}, dir).promptVersion, undefined);
    mkdirSync(join(dir, '.tbrl'));
    writeFileSync(join(dir, '.tbrl', 'config.json'), JSON.stringify({ promptVersion: 'compact-v1' }));
    assert.equal(resolveRunConfig({ policy: 'oracle' }, {}, dir).promptVersion, 'compact-v1');
    assert.equal(resolveRunConfig({ policy: 'oracle' }, { TBRL_PROMPT_VERSION: 'v1' }, dir).promptVersion, 'v1', 'the environment wins over the file');
    assert.throws(() => resolveRunConfig({ policy: 'oracle' }, { TBRL_PROMPT_VERSION: '../../etc/passwd' }, dir), (e: unknown) => e instanceof TbrlError && /not a version name/.test(e.message));
    assert.match(loadSystemPrompt('compact-v1').text, /^You are a terminal agent[\s\S]*<bash>\ncmd: /);
  });
});
