import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readSettings, resolveModel, profileSecret, API_KEY_SECRET } from '../../src/extension/settings';
import { fillLaunchDefaults } from '../../src/extension/debug/launch-defaults';
import { resolveRunConfig } from '../../src/core/run/config';

const settingsWith = (values: Record<string, unknown>) => readSettings((k) => values[k]);

const PROFILES = {
  local: { baseUrl: 'http://127.0.0.1:8000/v1', name: 'qwen3-8b', n: 4, verifier: 'pairwise', temperature: 0.7 },
  cheap: { baseUrl: 'http://127.0.0.1:9000/v1', name: 'small' },
  broken: { name: 'no-url', n: 0 },
  odd: 'not an object',
};

test('profiles: valid ones are read, each bad one is named with its fault and an example, and skipped', () => {
  const { settings, problems } = settingsWith({ 'model.profiles': PROFILES, 'model.profile': 'gone' });
  assert.deepEqual(Object.keys(settings.model.profiles), ['local', 'cheap']);
  assert.equal(problems.length, 3);
  assert.match(problems[0], /tbrl\.model\.profiles\["broken"\] is ignored: "baseUrl" must be a non-empty string; "n" must be a whole number >= 1\. Example: "tbrl\.model\.profiles": \{"local"/);
  assert.match(problems[1], /\["odd"\] is ignored: it is not an object/);
  assert.match(problems[2], /tbrl\.model\.profile "gone" is not in tbrl\.model\.profiles \(local, cheap\)/);
  assert.equal(settings.model.profile, '', 'an unknown default profile falls back to tbrl.model.*');
  assert.match(settingsWith({ 'model.profiles': [1] }).problems[0], /must be an object of named profiles/);
});

test('resolveModel: a profile over tbrl.model.*, the default profile when none is named, a clear error for an unknown one', () => {
  const { settings } = settingsWith({ 'model.profiles': PROFILES, 'model.profile': 'cheap', 'model.baseUrl': 'http://plain/v1', 'model.name': 'plain', 'model.n': 2, 'model.temperature': 0.2, 'verifier.mode': 'listwise' });
  assert.deepEqual(resolveModel(settings, 'local'), { profile: 'local', baseUrl: 'http://127.0.0.1:8000/v1', name: 'qwen3-8b', n: 4, temperature: 0.7, verifier: 'pairwise' });
  // Fields a profile leaves out come from the plain settings.
  assert.deepEqual(resolveModel(settings), { profile: 'cheap', baseUrl: 'http://127.0.0.1:9000/v1', name: 'small', n: 2, temperature: 0.2, verifier: 'listwise' });
  const unknown = resolveModel(settings, 'nope');
  assert.ok('error' in unknown);
  assert.match(unknown.error, /Model profile "nope" is not in tbrl\.model\.profiles \(known: local, cheap\)\. Add it .*"nope": \{"baseUrl"/);
  const plain = settingsWith({ 'model.baseUrl': 'http://plain/v1', 'model.name': 'plain' }).settings;
  assert.deepEqual(resolveModel(plain), { baseUrl: 'http://plain/v1', name: 'plain', n: 1, verifier: 'none' });
  assert.equal(profileSecret('local'), `${API_KEY_SECRET}/local`);
  assert.equal(profileSecret(undefined), API_KEY_SECRET);
});

test('fillLaunchDefaults: launch attributes win over the profile, the profile key over the default key, oracle runs get no model', async () => {
  const { settings } = settingsWith({ 'model.profiles': PROFILES, 'limits.maxSteps': 12 });
  const secrets: Record<string, string> = { [API_KEY_SECRET]: 'default-key', [profileSecret('local')]: 'local-key' };
  const secret = async (k: string) => secrets[k];
  const live = await fillLaunchDefaults({ task: 'examples/hello-world', profile: 'local', n: 2 }, '/ws', settings, secret);
  assert.ok(!('error' in live));
  assert.deepEqual(
    [live.task, live.cwd, live.baseUrl, live.model, live.n, live.temperature, live.verifier, live.apiKey, live.maxSteps, live.checkpoint],
    ['/ws/examples/hello-world', '/ws', 'http://127.0.0.1:8000/v1', 'qwen3-8b', 2, 0.7, 'pairwise', 'local-key', 12, true],
  );
  const cheap = await fillLaunchDefaults({ task: '/abs/task', profile: 'cheap' }, '/ws', settings, secret);
  assert.ok(!('error' in cheap));
  assert.deepEqual([cheap.task, cheap.model, cheap.apiKey, cheap.verifier], ['/abs/task', 'small', 'default-key', undefined], 'no key of its own: the default key; verifier none is not set');
  const oracle = await fillLaunchDefaults({ task: 't', policy: 'oracle', profile: 'nope' }, '/ws', settings, secret);
  assert.ok(!('error' in oracle));
  assert.deepEqual([oracle.baseUrl, oracle.apiKey], [undefined, undefined], 'the oracle needs no endpoint, so an unknown profile does not matter');
  const bad = await fillLaunchDefaults({ task: 't', profile: 'nope' }, '/ws', settings, secret);
  assert.ok('error' in bad && /Model profile "nope"/.test(bad.error));
  const replay = await fillLaunchDefaults({ trajectory: 'runs/r/trajectory.jsonl' }, '/ws', settings, secret);
  assert.ok(!('error' in replay));
  assert.deepEqual([replay.trajectory, replay.maxSteps, replay.apiKey], ['/ws/runs/r/trajectory.jsonl', undefined, undefined]);
});

test('fillLaunchDefaults and tbrl run agree: n > 1 with verifier "none" in settings gets the same default verifier', async () => {
  const { settings } = settingsWith({ 'model.baseUrl': 'http://127.0.0.1:8000/v1', 'model.name': 'm', 'model.n': 4, 'verifier.mode': 'none' });
  const live = await fillLaunchDefaults({ task: 't' }, '/ws', settings, async () => undefined);
  assert.ok(!('error' in live));
  assert.equal(live.verifier, resolveRunConfig({ baseUrl: live.baseUrl, model: live.model, n: live.n }, {}, '/nonexistent').verifier);
  assert.equal(live.verifier, 'listwise');
  const one = await fillLaunchDefaults({ task: 't', n: 1 }, '/ws', settings, async () => undefined);
  assert.equal(!('error' in one) && one.verifier, undefined);
});
