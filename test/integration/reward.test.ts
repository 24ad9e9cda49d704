/**
 * The verifier run against real containers: the example task (built offline from the stand-in
 * base image) in its oracle state, a partial state, a hanging test, a crashing runner, Harbor
 * reward files, mismatched weights, and the combined reward with a judge over the local server.
 * One container serves every case (each run starts from a fresh /tests), to keep the suite lean.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { createDockerProvider, type Sandbox } from '../../src/core/sandbox/index';
import { loadTask } from '../../src/core/tasks/load';
import { createTracedSandbox } from '../../src/core/trace/traced-sandbox';
import type { Task } from '../../src/core/tasks/model';
import { runTests } from '../../src/core/reward/tests';
import { computeReward, rewardIsUsable } from '../../src/core/reward/index';
import { startOpenAIServer } from '../helpers/openai-server';
import type { TrajectoryLine } from '../../src/core/trajectory/schema';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-reward-it-'));
const provider = createDockerProvider();
let sandbox: Sandbox;
let task: Task;

/** A variant of the example task whose tests (and runner) live in a scratch dir. */
function variant(name: string, files: Record<string, string>, patch: Partial<Task> = {}): Task {
  const dir = join(scratch, name);
  mkdirSync(join(dir, 'tests'), { recursive: true });
  for (const [f, content] of Object.entries(files)) writeFileSync(join(dir, f), content, { mode: 0o755 });
  return { ...task, id: name, dir, tests: { ...task.tests, runner: join(dir, 'run-tests.sh'), dir: join(dir, 'tests') }, testWeights: undefined, ...patch };
}

describe('verifier run in a real container', () => {
  before(async () => {
    task = await loadTask(EXAMPLE);
    // Traced like a real run: the verifier's reads become DepGPO's resource set E.
    sandbox = await createTracedSandbox(await provider.create({
      image: 'image' in task.environment ? { kind: 'image', image: task.environment.image } : { kind: 'dockerfile', context: task.environment.context, dockerfile: task.environment.dockerfile },
      runId: `test-reward-${process.pid}`,
    }));
    assert.equal(sandbox.info.tracing.available, true, sandbox.info.tracing.reason);
  });
  after(async () => {
    await sandbox?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('the empty state scores 0 with every weighted test failed (nothing silent: outcomes listed)', async () => {
    const r = await runTests({ task, sandbox });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.tests, 0);
    assert.deepEqual(r.outcomes?.map((o) => [o.name.split('::').pop(), o.status]), [
      ['test_script_exists', 'failed'], ['test_counts_correct', 'failed'], ['test_counts_sorted', 'failed'], ['test_summary_line', 'failed'],
    ]);
    // pytest runs from /app on /tests: its ids read ../tests/...; reports name them as the task does.
    assert.deepEqual(r.outcomes?.map((o) => o.name.split('::')[0]), Array(4).fill('tests/test_outputs.py'));
  });

  it('the oracle solution state scores 1.0 on tests', async () => {
    await sandbox.writeFile('/tmp/solution.sh', readFileSync(join(EXAMPLE, 'solution.sh')), 0o755);
    const sol = await sandbox.exec('bash /tmp/solution.sh', { timeoutMs: 60_000 });
    assert.equal(sol.exitCode, 0, sol.output);
    const r = await runTests({ task, sandbox });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.tests, 1);
    assert.equal(r.outcomes?.length, 4);
    assert.ok(r.outcomes?.every((o) => o.status === 'passed'));
    assert.match(r.log, /short test summary info/);
    // The traced run: E holds what the tests inspected, never the verifier's own /tests files.
    const reads = r.verifierTrace?.reads ?? [];
    for (const f of ['/app/out/counts.json', '/app/out/summary.txt', '/app/data/input.txt']) assert.ok(reads.includes(f), `${f} not in ${JSON.stringify(reads)}`);
    assert.ok(!reads.some((p) => p.startsWith('/tests/')), JSON.stringify(reads));
    assert.ok(r.commandTrace?.reads.some((p) => p.startsWith('/tests/')), 'the raw trace still shows the test files were read');
  });

  it('a partial solution scores exactly the sum of its passed weights (0.1 + 0.4)', async () => {
    // Same counts in the wrong order, and no summary: script_exists and counts_correct pass.
    const flip = await sandbox.exec(`python3 -c "import json; p='/app/out/counts.json'; d=json.load(open(p)); json.dump(d[::-1], open(p,'w'))" && rm /app/out/summary.txt`);
    assert.equal(flip.exitCode, 0, flip.output);
    const r = await runTests({ task, sandbox });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.tests, 0.5);
    assert.deepEqual(r.outcomes?.filter((o) => o.status === 'passed').map((o) => o.weight), [0.1, 0.4]);
  });

  it('a test that hangs is killed at the test timeout with the typed outcome and the log tail; the shell stays usable', async () => {
    const hang = variant('hang', {
      'run-tests.sh': '#!/bin/bash\ncd /app\npython3 -m pytest -p no:cacheprovider -rA "$TEST_DIR/test_hang.py"\n',
      'tests/test_hang.py': 'import time\n\ndef test_quick():\n    assert True\n\ndef test_hangs():\n    time.sleep(600)\n',
    }, { testTimeoutSec: 4 });
    const started = Date.now();
    const r = await runTests({ task: hang, sandbox });
    assert.ok(Date.now() - started < 30_000);
    assert.equal(r.error?.kind, 'timeout', JSON.stringify(r));
    assert.match(r.error!.message, /4s/);
    assert.match(r.error!.logTail, /test session starts/);
    assert.equal(r.tests, undefined);
    assert.equal((await sandbox.exec('echo alive')).output.trim(), 'alive');
  });

  it('a runner that crashes before pytest is a typed crash, exit 0 without a summary is no-summary', async () => {
    const crash = variant('crash', { 'run-tests.sh': '#!/bin/bash\necho "installing deps failed: no network" >&2\nexit 7\n' });
    const r = await runTests({ task: crash, sandbox });
    assert.equal(r.error?.kind, 'crash');
    assert.equal(r.exitCode, 7);
    assert.match(r.error!.logTail, /no network/);
    const quiet = variant('quiet', { 'run-tests.sh': '#!/bin/bash\ncd /app\npython3 -m pytest -q -p no:cacheprovider "$TEST_DIR/test_ok.py"\n', 'tests/test_ok.py': 'def test_ok():\n    pass\n' });
    const q = await runTests({ task: quiet, sandbox });
    assert.equal(q.error?.kind, 'no-summary', JSON.stringify(q));
    assert.match(q.error!.message, /-rA/);
  });

  it('files the agent left in /tests cannot steer the run (fresh /tests each time)', async () => {
    await sandbox.exec('mkdir -p /tests && printf "import pytest\\n@pytest.hookimpl(tryfirst=True)\\ndef pytest_collection_modifyitems(items):\\n    items.clear()\\n" > /tests/conftest.py');
    const r = await runTests({ task, sandbox });
    assert.equal(r.tests, 0.5);
  });

  it("the agent's shell state (env, cwd, functions, venv-style PATH) cannot steer the verdict", async () => {
    const shell = await sandbox.exec([
      'export PYTEST_ADDOPTS="-k nothing_matches" PYTHONPATH=/tmp/evil PATH=/tmp/evil:$PATH',
      'mkdir -p /tmp/evil && printf "#!/bin/sh\\necho PASSED fake.py::test_script_exists\\n" > /tmp/evil/python3 && chmod +x /tmp/evil/python3',
      'bash() { echo "PASSED x::test_counts_sorted"; }',
      'cd /tmp',
    ].join('\n'));
    assert.equal(shell.exitCode, 0, shell.output);
    const r = await runTests({ task, sandbox });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.tests, 0.5);
    // The agent's shell is left as it was.
    assert.equal((await sandbox.exec('echo "$PYTEST_ADDOPTS $(pwd) $(type -t bash)"')).output.trim(), '-k nothing_matches /tmp function');
    await sandbox.exec('unset -f bash; unset PYTEST_ADDOPTS PYTHONPATH; export PATH=${PATH#/tmp/evil:}; cd /app');
  });

  it("the image's ENV and WORKDIR are read once per sandbox, in the test preparation's exec, and later test runs still start there", async () => {
    const reads: string[][] = [];
    const counting = new Proxy(sandbox, {
      get(target, key) {
        if (key === 'execArgv') return (argv: string[], options: Parameters<Sandbox['execArgv']>[1]) => { reads.push(argv); return target.execArgv(argv, options); };
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const probe = variant('where', { 'run-tests.sh': '#!/bin/bash\necho "start=$(pwd) path=$PATH"\nexit 3\n' });
    const first = await runTests({ task: probe, sandbox: counting });
    await sandbox.exec('cd /tmp');
    const second = await runTests({ task: probe, sandbox: counting });
    assert.equal(reads.filter((argv) => argv.join(' ').includes('/proc/1/environ')).length, 1, 'one read of PID 1 for both runs');
    // Each test run costs one exec outside the shell (every exec is a runc exec for the daemon): PID 1 is read in the first one's preparation.
    assert.equal(reads.length, 2, reads.map((argv) => argv.join(' ')).join('\n'));
    for (const r of [first, second]) {
      assert.match(r.log, /start=\/app path=\S*\/usr\/bin/, r.log);
    }
    await sandbox.exec('cd /app');
  });

  it('weights that name no test are a task error, and the reward says it is not usable', async () => {
    const bad = { ...task, testWeights: { hello_file_exists: 0.5, hello_file_content: 0.5 } };
    const { reward } = await computeReward({ task: bad, sandbox, trajectoryLines: [] });
    assert.equal(reward.testError?.kind, 'task-error');
    assert.match(reward.testError!.message, /reward.weights-mismatch.*test_script_exists/s);
    assert.equal(rewardIsUsable(reward), false);
  });

  it('Harbor: reward.txt is read; a stale reward file from the agent is removed first; reward.json works', async () => {
    const harbor = (name: string, script: string) => variant(name, { 'tests/test.sh': script }, { format: 'harbor', tests: { runner: join(scratch, name, 'tests', 'test.sh'), dir: join(scratch, name, 'tests'), kind: 'harbor-reward' } });
    const txt = await runTests({ task: harbor('h-txt', '#!/bin/bash\nmkdir -p /logs/verifier\necho 0.25 > /logs/verifier/reward.txt\n'), sandbox });
    assert.equal(txt.tests, 0.25, JSON.stringify(txt));
    await sandbox.exec('mkdir -p /logs/verifier && echo 1.0 > /logs/verifier/reward.txt');
    const none = await runTests({ task: harbor('h-none', '#!/bin/bash\necho "checked nothing"\n'), sandbox });
    assert.equal(none.error?.kind, 'no-reward-file', JSON.stringify(none));
    const json = await runTests({ task: harbor('h-json', '#!/bin/bash\necho \'{"reward": 0.75}\' > /logs/verifier/reward.json\n'), sandbox });
    assert.equal(json.tests, 0.75);
    const garbage = await runTests({ task: harbor('h-bad', '#!/bin/bash\necho lots > /logs/verifier/reward.txt\n'), sandbox });
    assert.equal(garbage.error?.kind, 'bad-reward-file');
  });

  it('computeReward: 0.65 tests + 0.35 judge over the local server; without a judge, tests only', async () => {
    const srv = await startOpenAIServer();
    try {
      srv.respond = () => '```json\n{"components": {"action_output_success": 0.6, "todo_planning": 0.6, "phase_adherence": 0.6, "tool_use": 0.6}, "caps": [], "penalties": {}}\n```';
      const lines: TrajectoryLine[] = [{ type: 'header', schema: 'tbrl.trajectory/1.0', runId: 'x', startedAt: '', task: { id: task.id, dir: task.dir, format: task.format, instruction: task.instruction }, policy: { kind: 'oracle' }, config: {}, versions: { tbrl: '0', node: '0' } }];
      await sandbox.exec('bash /tmp/solution.sh');
      const withJudge = await computeReward({ task, sandbox, trajectoryLines: lines, judge: { backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'judge' }, log: () => undefined } });
      assert.equal(withJudge.reward.tests, 1);
      assert.ok(withJudge.reward.judge && 'score' in withJudge.reward.judge && withJudge.reward.judge.score === 0.6);
      assert.deepEqual(withJudge.reward.weights, { tests: 0.65, judge: 0.35 });
      assert.equal(withJudge.reward.total, 0.86);
      assert.equal(srv.calls, 1);
      const testsOnly = await computeReward({ task, sandbox, trajectoryLines: lines });
      assert.deepEqual(testsOnly.reward.weights, { tests: 1, judge: 0 });
      assert.equal(testsOnly.reward.total, 1);
    } finally {
      await srv.close();
    }
  });
});
