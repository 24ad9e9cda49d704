import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { readSettings } from '../../src/extension/settings';
import { fillLaunchDefaults } from '../../src/extension/debug/launch-defaults';
import { startLiveRun } from '../../src/extension/debug/live';
import type { LaunchArgs } from '../../src/extension/debug/launch-args';

// The debugger's live runs honour `tbrl.sandbox.allowPrivileges` (or the launch's own
// "allowPrivileges") as `tbrl run --allow-privilege` does. No Docker: DOCKER_HOST points nowhere,
// so an allowed run gets past loading the task and fails only when it asks for a sandbox.
delete process.env.TBRL_ALLOW_PRIVILEGES;
process.env.DOCKER_HOST = 'unix:///nonexistent/tbrl-test-docker.sock';
const dir = mkdtempSync(join(tmpdir(), 'tbrl-live-priv-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const settingsWith = (values: Record<string, unknown>) => readSettings((k) => values[k]).settings;
const noSecret = async (): Promise<undefined> => undefined;

test('fillLaunchDefaults: a live launch takes the allowed privilege keys from settings unless it names its own', async () => {
  const s = settingsWith({ 'sandbox.allowPrivileges': ['cap_add', 'devices'] });
  const live = (await fillLaunchDefaults({ task: 't', policy: 'oracle' }, '/ws', s, noSecret)) as LaunchArgs;
  assert.deepEqual(live.allowPrivileges, ['cap_add', 'devices']);
  const own = (await fillLaunchDefaults({ task: 't', policy: 'oracle', allowPrivileges: ['privileged'] }, '/ws', s, noSecret)) as LaunchArgs;
  assert.deepEqual(own.allowPrivileges, ['privileged'], 'the launch attribute wins');
  const none = (await fillLaunchDefaults({ task: 't', policy: 'oracle' }, '/ws', settingsWith({}), noSecret)) as LaunchArgs;
  assert.equal(none.allowPrivileges, undefined, 'nothing allowed: the run falls back to TBRL_ALLOW_PRIVILEGES, as the CLI does');
  const replay = (await fillLaunchDefaults({ trajectory: 'runs/r/trajectory.jsonl' }, '/ws', s, noSecret)) as LaunchArgs;
  assert.equal(replay.allowPrivileges, undefined);
});

/** Starts a live run of a task whose compose file adds a capability; resolves with its error and output. */
async function liveRunOf(allowPrivileges: string[] | undefined): Promise<{ error?: string; output: string[] }> {
  const task = mkdtempSync(join(dir, 'task-'));
  const files: Record<string, string> = {
    'task.yaml': 'instruction: say hi\n',
    Dockerfile: 'FROM debian:bookworm-slim\n',
    'docker-compose.yaml': 'services:\n  client:\n    build: .\n    cap_add: [SYS_PTRACE]\n',
    'run-tests.sh': '#!/bin/bash\ntrue\n',
    'solution.sh': '#!/bin/bash\necho hi\n',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(task, name), text);
  mkdirSync(join(task, 'tests'));
  const output: string[] = [];
  let error: string | undefined;
  const run = startLiveRun({ task, cwd: dir, runsDir: join(dir, 'runs'), policy: 'oracle', checkpoint: false, skipReward: true, allowPrivileges }, {
    output: (t) => output.push(t),
    onHeader: () => undefined,
    onStep: () => undefined,
    beforeExecute: async () => ({ action: 'stop' }),
    onEnd: () => undefined,
    onError: (m) => (error = m),
  });
  await run.done;
  run.cancel(); // ends the header poll
  return { error, output };
}

test('a live run refuses a capability nobody allowed, naming it, and runs past the task with cap_add allowed', { timeout: 60_000 }, async () => {
  const refused = await liveRunOf(undefined);
  assert.match(refused.error ?? '', /cap_add/);
  assert.match(refused.error ?? '', /allow-privilege|allowPrivileges/);

  const allowed = await liveRunOf(['cap_add']);
  assert.doesNotMatch(allowed.error ?? '', /cap_add/, 'the allowed key is not refused');
  assert.ok(allowed.output.some((l) => /oracle/i.test(l)), `the run went on to choose its policy: ${allowed.output.join(' | ')}`);
});
