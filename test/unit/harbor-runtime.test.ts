import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadTask } from '../../src/core/tasks/load';
import { assertHarborRuntimeSupported, resolveEnvTemplates } from '../../src/core/tasks/harbor-runtime';
import { harborRewardOf } from '../../src/core/reward/tests';
import { staticCheckTask } from '../../src/core/tasks/static-checks';
import { taskSandboxSpec } from '../../src/core/run/task-sandbox';
import { TbrlError } from '../../src/core/errors';

const root = mkdtempSync(join(tmpdir(), 'tbrl-harbor-runtime-'));
after(() => rmSync(root, { recursive: true, force: true }));

function task(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  const all = { 'instruction.md': 'Do it.\n', 'environment/Dockerfile': 'FROM debian:bookworm-slim\n', 'tests/test.sh': '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n', ...files };
  for (const [rel, content] of Object.entries(all)) {
    if (content === '') continue;
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  return dir;
}

test('task.toml runtime fields are read as Harbor 1.3 defines them and become the sandbox spec', async () => {
  const dir = task('full', {
    'task.toml': [
      'version = "1.0"',
      '[agent]', 'timeout_sec = 30.0', 'user = "agent"', '[agent.env]', 'MODE = "fast"',
      '[verifier]', 'environment_mode = "separate"', 'user = "root"', '[verifier.env]', 'KEY = "${TBRL_UT_KEY:-none}"',
      '[environment]', 'network_mode = "no-network"', 'allow_internet = true', 'cpus = 2', 'memory = "512M"', 'storage_mb = 2048', 'workdir = "/work"',
      '[environment.env]', 'TOKEN = "${TBRL_UT_TOKEN}"',
      '[environment.healthcheck]', 'command = "true"', 'retries = 5',
      '',
    ].join('\n'),
  });
  const t = await loadTask(dir);
  const rt = t.harbor!;
  assert.equal(rt.verifier.mode, 'separate');
  assert.equal(rt.environment.network, 'no-network', 'network_mode wins over allow_internet');
  assert.equal(rt.environment.memoryMb, 512);
  assert.deepEqual(rt.environment.healthcheck, { command: 'true', intervalSec: 5, timeoutSec: 30, startPeriodSec: 0, startIntervalSec: 5, retries: 5 });
  assert.deepEqual(rt.refusals, []);
  const spec = taskSandboxSpec(t, { TBRL_UT_TOKEN: 'abc' });
  assert.deepEqual(spec, { network: false, limits: { cpus: 2, memoryBytes: 512 * 1024 ** 2, diskBytes: 2048 * 1024 ** 2 }, env: { TOKEN: 'abc' }, workdir: '/work', user: 'agent' });
  assert.throws(() => taskSandboxSpec(t, {}), (err: unknown) => err instanceof TbrlError && /\[environment\]\.env\.TOKEN.*TBRL_UT_TOKEN/.test(err.message));
});

test('${VAR} and ${VAR:-default} resolve from the host; an unset variable without default names the field', () => {
  assert.deepEqual(resolveEnvTemplates({ A: 'x-${H}-y', B: '${MISSING:-dflt}', C: 'plain' }, { H: 'h' }, '[verifier].env'), { A: 'x-h-y', B: 'dflt', C: 'plain' });
  assert.throws(() => resolveEnvTemplates({ K: '${NOPE}' }, {}, '[verifier].env'), /\[verifier\]\.env\.K = "\$\{NOPE\}" needs \$\{NOPE\}/);
});

test('what cannot be honoured is refused, naming each field; static checks warn about it and about sidecars', async () => {
  const dir = task('refused', {
    'task.toml': 'version = "1.0"\n[agent.network]\nmode = "public"\n[environment]\ntype = "cloudlab"\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\ngpus = 1\nmcp_servers = [{ name = "x", url = "http://x" }]\n[verifier.environment]\ndocker_image = "python:3.12"\n',
    'environment/docker-compose.yaml': 'services:\n  main:\n    depends_on: [db]\n  db:\n    image: postgres:16\n    ports: ["5432:5432"]\n',
  });
  const t = await loadTask(dir);
  const refusals = t.harbor!.refusals.join('\n');
  assert.match(refusals, /allowlist.*pypi\.org/);
  assert.match(refusals, /gpus = 1/);
  assert.match(refusals, /mcp_servers/);
  assert.match(refusals, /\[verifier\.environment\]/);
  assert.match(refusals, /'db'.*ports/);
  assert.deepEqual(t.harbor!.sidecars.map((s) => s.name), ['db']);
  assert.throws(() => assertHarborRuntimeSupported(t.harbor, t.id), (err: unknown) => err instanceof TbrlError && err.code === 'TASK_UNSUPPORTED_FIELD' && /gpus/.test(err.message));
  const findings = await staticCheckTask(t);
  assert.ok(findings.some((f) => f.severity === 'warning' && /allowlist/.test(f.message)));
  assert.ok(findings.some((f) => f.severity === 'warning' && /'agent\.network' is not a Harbor 1\.3 task\.toml key/.test(f.message)));
  assert.ok(findings.some((f) => f.severity === 'warning' && /'environment\.type' is not a Harbor/.test(f.message)));
  assert.ok(findings.some((f) => f.severity === 'warning' && /sidecars/.test(f.message) && /db/.test(f.message)));
});

test('a test.sh that runs nothing is not a test; inline checks are', async () => {
  const empty = await loadTask(task('empty-tests', { 'task.toml': 'version = "1.0"\n', 'tests/test.sh': '#!/bin/bash\n# nothing yet\n\n' }));
  assert.ok((await staticCheckTask(empty)).some((f) => f.check === 'tests' && f.severity === 'error'));
  const inline = await loadTask(task('inline-tests', { 'task.toml': 'version = "1.0"\n', 'tests/test.sh': '#!/bin/bash\n[ -f /app/x ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n' }));
  assert.deepEqual((await staticCheckTask(inline)).filter((f) => f.severity === 'error'), []);
});

test('[[steps]] tasks load without a root instruction.md, each step with its own files and gates', async () => {
  const dir = task('steps', {
    'instruction.md': '',
    'tests/test.sh': '',
    'task.toml': 'schema_version = "1.1"\nmulti_step_reward_strategy = "final"\n[[steps]]\nname = "a"\nmin_reward = { reward = 1.0 }\n[steps.healthcheck]\ncommand = "true"\n[[steps]]\nname = "b"\n[steps.verifier]\ntimeout_sec = 5.0\n[steps.verifier.env]\nX = "1"\n',
    'steps/a/instruction.md': 'First.\n',
    'steps/a/tests/test.sh': '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n',
    'steps/a/solution/solve.sh': '#!/bin/bash\ntrue\n',
    'steps/b/instruction.md': 'Second.\n',
    'steps/b/workdir/setup.sh': '#!/bin/bash\ntrue\n',
  });
  const t = await loadTask(dir);
  const steps = t.harbor!.steps!;
  assert.equal(t.instruction, 'First.');
  assert.equal(t.harbor!.stepRewardStrategy, 'final');
  assert.deepEqual(steps.map((s) => s.name), ['a', 'b']);
  assert.deepEqual(steps[0].minReward, { reward: 1 });
  assert.equal(steps[0].healthcheck?.command, 'true');
  assert.equal(steps[1].verifierTimeoutSec, 5);
  assert.deepEqual(steps[1].verifierEnv, { X: '1' });
  assert.ok(steps[1].workdirDir?.endsWith('steps/b/workdir'));
  assert.equal(steps[1].testsDir, undefined);
  await assert.rejects(loadTask(task('steps-missing', { 'instruction.md': '', 'task.toml': '[[steps]]\nname = "a"\n' })), /step 'a' needs a non-empty instruction\.md/);
});

test('reward.json: the reward key, else the only key, else the mean of the metrics, and the rule says which', () => {
  assert.deepEqual(harborRewardOf({ reward: 0.5, style: 1 }), { value: 0.5, rule: 'the "reward" key (other metrics kept: style)' });
  assert.deepEqual(harborRewardOf({ accuracy: 0.25 }), { value: 0.25, rule: 'the only metric, "accuracy"' });
  const mean = harborRewardOf({ correctness: 1, performance: 0 })!;
  assert.equal(mean.value, 0.5);
  assert.match(mean.rule, /mean of 2 metrics \(correctness, performance\)/);
  assert.equal(harborRewardOf({}), undefined);
});
