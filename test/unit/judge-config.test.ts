import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { resolveJudgeSwitch } from '../../src/core/reward/judge/config';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-judge-config-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const quiet = { log: () => undefined };

test('no judge anywhere: undefined, so the reward is tests only', () => {
  assert.equal(resolveJudgeSwitch({ env: {}, cwd: scratch, ...quiet }), undefined);
});

test('environment: an OpenAI endpoint or a command; half an endpoint is an error naming both variables', () => {
  const sw = resolveJudgeSwitch({ env: { TBRL_JUDGE_BASE_URL: 'http://127.0.0.1:9/v1', TBRL_JUDGE_MODEL: 'j', TBRL_JUDGE_API_KEY_ENV: 'K' }, cwd: scratch, ...quiet });
  assert.deepEqual(sw?.config, { kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'j', apiKey: undefined, apiKeyEnv: 'K', temperature: undefined, maxTokens: undefined, timeoutMs: undefined });
  assert.equal(resolveJudgeSwitch({ env: { TBRL_JUDGE_COMMAND: 'claude -p --model x' }, cwd: scratch, ...quiet })?.label, 'command:claude -p --model x');
  assert.throws(() => resolveJudgeSwitch({ env: { TBRL_JUDGE_MODEL: 'j' }, cwd: scratch, ...quiet }), /TBRL_JUDGE_BASE_URL and TBRL_JUDGE_MODEL must be set together/);
  // Explicit settings beat the environment.
  assert.equal(resolveJudgeSwitch({ settings: { backend: { kind: 'command', command: 'llm' } }, env: { TBRL_JUDGE_COMMAND: 'other' }, cwd: scratch, ...quiet })?.label, 'command:llm');
});

test('a control file alone turns the judge on and overrides the environment while it exists', async () => {
  const dir = join(scratch, 'proj');
  mkdirSync(join(dir, '.tbrl'), { recursive: true });
  writeFileSync(join(dir, '.tbrl', 'judge-backend.json'), JSON.stringify({ kind: 'command', command: 'from-file' }));
  const sw = resolveJudgeSwitch({ env: {}, cwd: dir, ...quiet });
  assert.ok(sw);
  assert.equal((await sw.current())?.label, 'command:from-file');
  const both = resolveJudgeSwitch({ env: { TBRL_JUDGE_COMMAND: 'from-env' }, cwd: dir, ...quiet })!;
  assert.equal(both.label, 'command:from-env');
  assert.equal((await both.current())?.label, 'command:from-file');
  writeFileSync(join(dir, '.tbrl', 'judge-backend.json'), '{"kind": "openai"}');
  assert.throws(() => resolveJudgeSwitch({ env: {}, cwd: dir, ...quiet }), /"baseUrl" must be an http/);
});
