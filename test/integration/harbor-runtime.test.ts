/**
 * Harbor 1.3 runtime semantics on real Docker, with small tasks written here in each shape: a
 * solve.sh that copies from /solution, a separate verifier, a multi-metric reward.json, [[steps]]
 * with per-step verifiers and min_reward, a compose sidecar the agent reaches on the task's own
 * network, a healthcheck waited for (and one that never passes), env `${VAR}` resolved from the host.
 */
import { runTaskOk } from '../helpers/run';
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createDockerProvider, LABEL_RUN } from '../../src/core/sandbox/index';
import { validateTasks } from '../../src/core/tasks/validate';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { bashTurn, finishTurn } from '../../src/core/agent/oracle';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-harbor-rt-'));
const provider = createDockerProvider();
const BASE = 'FROM debian:bookworm-slim\nWORKDIR /app\n';
const REWARD = (cond: string) => `#!/bin/bash\nmkdir -p /logs/verifier\nif ${cond}; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n`;

after(() => rmSync(scratch, { recursive: true, force: true }));

const STEPS_FILES: Record<string, string> = {
        'task.toml': 'schema_version = "1.1"\n\n[environment]\nworkdir = "/app"\n\n[[steps]]\nname = "one"\nmin_reward = 1.0\n\n[[steps]]\nname = "two"\n\n[steps.verifier.env]\nEXPECTED = "${TBRL_IT_UNSET_VAR:-two}"\n',
        'environment/Dockerfile': BASE,
        'tests/helpers.sh': 'reward() { mkdir -p /logs/verifier; echo "$1" > /logs/verifier/reward.txt; }\n',
        'steps/one/instruction.md': 'Write one into /app/log.\n',
        'steps/one/solution/solve.sh': '#!/bin/bash\necho one > /app/log\n',
        'steps/one/tests/test.sh': '#!/bin/bash\nsource /tests/helpers.sh\n[ "$(cat /app/log)" = one ] && reward 1 || reward 0\n',
        'steps/two/instruction.md': 'Append the content of seed.txt to /app/log.\n',
        'steps/two/workdir/seed.txt': 'two\n',
        'steps/two/solution/solve.sh': '#!/bin/bash\ncat /app/seed.txt >> /app/log\n',
        'steps/two/tests/test.sh': '#!/bin/bash\nsource /tests/helpers.sh\n[ "$(tail -n1 /app/log)" = "$EXPECTED" ] && reward 1 || reward 0\n',
};

function task(name: string, files: Record<string, string>): string {
  const dir = join(scratch, name);
  for (const [rel, content] of Object.entries(files)) {
    const path = join(dir, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    if (rel.endsWith('.sh')) chmodSync(path, 0o755);
  }
  return dir;
}

const toml = (extra = '') => `version = "1.0"\n\n[verifier]\ntimeout_sec = 30.0\n\n[agent]\ntimeout_sec = 60.0\n${extra}`;

async function leftovers(): Promise<string[]> {
  const [containers, networks] = await Promise.all([
    provider.docker.listContainers({ all: true, filters: { label: [LABEL_RUN] } }),
    provider.docker.listNetworks({ filters: { label: [LABEL_RUN] } }),
  ]);
  const ours = (labels: Record<string, string> | undefined) => labels?.[LABEL_RUN]?.startsWith('validate-harbor-rt') || labels?.[LABEL_RUN]?.startsWith('hrt-');
  return [...containers.filter((c) => ours(c.Labels)).map((c) => c.Id), ...networks.filter((n) => ours(n.Labels)).map((n) => n.Name)];
}

describe('Harbor runtime semantics with Docker', () => {
  it('validates one task of each shape: oracle 1, empty agent below 1, with the reason when not', async () => {
    process.env.TBRL_IT_GREETING = 'hello-from-host';
    const tasks = {
      solutionCopy: task('harbor-rt-solution-copy', {
        'task.toml': toml(),
        'instruction.md': 'Write the answer into /app/answer.txt.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\nset -e\ncp /solution/answer.txt /app/answer.txt\n',
        'solution/answer.txt': '42\n',
        'tests/test.sh': REWARD('[ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]'),
      }),
      // The agent leaves a process behind; a separate verifier sees the files, never the process.
      separate: task('harbor-rt-separate', {
        'task.toml': 'version = "1.0"\n\n[verifier]\ntimeout_sec = 30.0\nenvironment_mode = "separate"\n\n[agent]\ntimeout_sec = 60.0\n',
        'instruction.md': 'Create /app/out.txt.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\necho done > /app/out.txt\n(exec -a tbrl-agent-leftover sleep 1000) >/dev/null 2>&1 &\n',
        'tests/test.sh': REWARD('[ -f /app/out.txt ] && ! grep -qa tbrl-agent-leftover /proc/[0-9]*/cmdline 2>/dev/null'),
      }),
      multiMetric: task('harbor-rt-multi-metric', {
        'task.toml': toml(),
        'instruction.md': 'Create /app/a and /app/b.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\ntouch /app/a /app/b\n',
        'tests/test.sh': '#!/bin/bash\nmkdir -p /logs/verifier\na=0; b=0\n[ -f /app/a ] && a=1\n[ -f /app/b ] && b=1\necho "{\\"correctness\\": $a, \\"completeness\\": $b}" > /logs/verifier/reward.json\n',
      }),
      steps: task('harbor-rt-steps', STEPS_FILES),
      sidecar: task('harbor-rt-sidecar', {
        'task.toml': toml('\n[environment]\nnetwork_mode = "no-network"\n'),
        'instruction.md': 'Fetch the token from http://api:8000/ into /app/token.\n',
        'environment/Dockerfile': BASE,
        'environment/docker-compose.yaml': [
          'services:',
          '  main:',
          '    depends_on: [api]',
          '  api:',
          '    image: tbrl-standin/python:3',
          '    command: ["sh", "-c", "mkdir -p /srv && cd /srv && echo tok-7731 > index.html && exec python3 -m http.server 8000"]',
          '    healthcheck:',
          '      test: ["CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen(\'http://localhost:8000/\')"]',
          '      interval: 1s',
          '      retries: 20',
          '',
        ].join('\n'),
        'solution/solve.sh': '#!/bin/bash\nexec 3<>/dev/tcp/api/8000\nprintf "GET / HTTP/1.0\\r\\nHost: api\\r\\n\\r\\n" >&3\ntail -n1 <&3 > /app/token\n',
        'tests/test.sh': REWARD('[ "$(cat /app/token 2>/dev/null)" = tok-7731 ]'),
      }),
      // The healthcheck fails once, then passes: the agent starts only after it passed.
      healthcheckEnv: task('harbor-rt-healthcheck-env', {
        'task.toml': [
          'version = "1.0"', '', '[verifier]', 'timeout_sec = 30.0', '', '[verifier.env]', 'EXPECTED = "${TBRL_IT_GREETING}"', '',
          '[agent]', 'timeout_sec = 60.0', '', '[environment.env]', 'GREETING = "${TBRL_IT_GREETING}"', '',
          '[environment.healthcheck]', 'command = "[ -f /tmp/probed ] || { touch /tmp/probed; exit 1; }"', 'interval_sec = 1', 'retries = 3', '',
        ].join('\n'),
        'instruction.md': 'Write $GREETING into /app/greeting.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\n[ -f /tmp/probed ] && echo "$GREETING" > /app/greeting\n',
        'tests/test.sh': REWARD('[ -n "$EXPECTED" ] && [ "$(cat /app/greeting 2>/dev/null)" = "$EXPECTED" ]'),
      }),
      // The agent runs as [agent] user, the verifier as its own [verifier] user.
      users: task('harbor-rt-users', {
        'task.toml': 'version = "1.0"\n[agent]\ntimeout_sec = 60.0\nuser = "nobody"\n[verifier]\ntimeout_sec = 30.0\nuser = "root"\n',
        'instruction.md': 'Write your user name into /app/who.\n',
        'environment/Dockerfile': 'FROM debian:bookworm-slim\nRUN mkdir -p /app && chmod 777 /app\nWORKDIR /app\n',
        'solution/solve.sh': '#!/bin/bash\nid -un > /app/who\n',
        'tests/test.sh': REWARD('[ "$(cat /app/who 2>/dev/null)" = nobody ] && [ "$(id -un)" = root ]'),
      }),
      unhealthy: task('harbor-rt-unhealthy', {
        'task.toml': toml('\n[environment.healthcheck]\ncommand = "test -f /never"\ninterval_sec = 0.2\nretries = 2\n'),
        'instruction.md': 'Nothing.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\ntrue\n',
        'tests/test.sh': REWARD('true'),
      }),
      // solve.sh depends on a file the task forgot to ship: validate must say which command failed and why.
      brokenOracle: task('harbor-rt-broken-oracle', {
        'task.toml': toml(),
        'instruction.md': 'Write the answer into /app/answer.txt.\n',
        'environment/Dockerfile': BASE,
        'solution/solve.sh': '#!/bin/bash\ncp /solution/missing.py /app/answer.txt\n',
        'tests/test.sh': REWARD('[ -f /app/answer.txt ]'),
      }),
    };
    const paths = Object.values(tasks);
    const results = await validateTasks(paths, { provider, concurrency: 2 });
    const by = Object.fromEntries(Object.keys(tasks).map((k, i) => [k, results[i]]));
    for (const name of ['solutionCopy', 'separate', 'multiMetric', 'steps', 'sidecar', 'healthcheckEnv', 'users']) {
      const r = by[name];
      assert.equal(r.valid, true, `${name}: ${r.problems.join('; ')}`);
      assert.equal(r.oracle.score, 1, name);
      assert.ok((r.empty.score ?? 0) < 1, `${name}: empty agent ${r.empty.score}`);
    }
    // The empty agent of the multi-metric task scores the mean of its two zero metrics.
    assert.equal(by.multiMetric.empty.score, 0);
    assert.equal(by.unhealthy.valid, false);
    assert.match(by.unhealthy.build.message ?? '', /healthy.*test -f \/never/s);
    assert.equal(by.brokenOracle.valid, false);
    assert.match(by.brokenOracle.oracle.message ?? '', /cp \/solution\/missing\.py.*exit 1.*cannot stat|No such file/s);
    assert.deepEqual(await leftovers(), []);
  });

  it('keeps /solution out of an agent run, and keeps every reward.json metric in the reward record', async () => {
    const dir = task('harbor-rt-run-metrics', {
      'task.toml': toml(),
      'instruction.md': 'Create /app/a.\n',
      'environment/Dockerfile': BASE,
      'solution/solve.sh': '#!/bin/bash\ntouch /app/a\n',
      'tests/test.sh': '#!/bin/bash\nmkdir -p /logs/verifier\na=0; [ -f /app/a ] && a=1\necho "{\\"correctness\\": $a, \\"style\\": 0.5}" > /logs/verifier/reward.json\n',
    });
    const policy = new ScriptedPolicy([bashTurn('ls /solution 2>&1; touch /app/a'), finishTurn('done')], { kind: 'scripted', description: 'scripted' });
    const result = await runTaskOk({ taskDir: dir, outDir: join(scratch, 'run-metrics'), policyOverride: policy, sandboxProvider: provider, trace: false });
    const observation = result.steps[0].actions[0].observation;
    assert.match(observation, /No such file or directory/);
    const reward = result.footer.reward!;
    assert.deepEqual(reward.metrics, { correctness: 1, style: 0.5 });
    assert.equal(reward.tests, 0.75);
    assert.match(reward.metricsRule ?? '', /mean of 2 metrics/);
    assert.match(readFileSync(result.reportPath, 'utf8'), /metrics: correctness = 1, style = 0\.5/);
  });

  it('runs [[steps]] as one conversation: each step verified, min_reward stops the rest', async () => {
    const solved = await runTaskOk({ taskDir: task('harbor-rt-steps-run', STEPS_FILES), outDir: join(scratch, 'steps-oracle'), policy: 'oracle', sandboxProvider: provider, trace: false });
    assert.equal(solved.footer.reward?.tests, 1);
    assert.match(solved.footer.reward?.metricsRule ?? '', /mean over 2 verified step\(s\) \(one: 1, two: 1\)/);
    assert.deepEqual(solved.steps.map((s) => s.index), solved.steps.map((_, i) => i));
    const idle = new ScriptedPolicy([finishTurn('nothing to do')], { kind: 'scripted', description: 'idle' });
    const stopped = await runTaskOk({ taskDir: join(scratch, 'harbor-rt-steps-run'), outDir: join(scratch, 'steps-idle'), policyOverride: idle, sandboxProvider: provider, trace: false });
    assert.equal(stopped.footer.reward?.tests, 0);
    assert.match(stopped.footer.reward?.metricsRule ?? '', /stopped after one \(reward = 0 < min_reward 1\)/);
    assert.ok(stopped.warnings.some((w) => /Stopped after step one/.test(w)));
  });
});
