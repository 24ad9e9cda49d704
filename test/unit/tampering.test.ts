import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tamperFlags } from '../../src/core/reward/tampering';
import { buildStepView } from '../../webview/step-inspector/model';
import { renderReport } from '../../src/core/run/report';
import { formatTrajectory, sanitizeForTerminal } from '../../src/core/trajectory/replay';
import type { ActionRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';
import { TRAJECTORY_SCHEMA } from '../../src/core/trajectory/schema';

function step(index: number, writes: string[], reads: string[] = [], observation = ''): StepRecord {
  const action: ActionRecord = {
    kind: 'bash', input: { cmd: 'x' }, observation, ok: true, exitCode: 0, durationMs: 1,
    trace: { reads, writes: writes.map((path) => ({ path, hunks: [], linesAfter: 1 })), stdoutValues: [], ports: [], processes: [] },
  };
  return { type: 'step', index, startedAt: '', durationMs: 1, candidates: [], chosenText: 'x', actions: [action], parseErrors: [], usage: { promptTokens: 0, completionTokens: 0 }, todos: [], scratchpad: [] };
}

test('tamper flags: test files, pytest hooks, the runner and interpreter, the solution, the reward directory; honest work is not flagged', () => {
  const steps = [
    step(0, ['/app/hello.txt', '/usr/local/lib/python3.13/site-packages/requests/__init__.py', '/tmp/x.py']),
    step(1, ['/tests/test_outputs.py', '/app/conftest.py']),
    step(2, ['/usr/local/bin/python3', '/usr/local/lib/python3.13/site-packages/_pytest/main.py', '/usr/lib/python3/dist-packages/evil.pth', '/usr/local/lib/python3.13/site-packages/x.pth']),
    step(3, ['/logs/verifier/reward.txt'], ['/solution/solve.sh', '/app/data.csv']),
    step(4, ['/app/conftest.py']),
  ];
  const flags = tamperFlags(steps);
  assert.deepEqual(flags.map((f) => [f.step, f.kind, f.path]), [
    [1, 'test-files', '/tests/test_outputs.py'],
    [1, 'test-hook', '/app/conftest.py'],
    [2, 'test-runner', '/usr/local/bin/python3'],
    [2, 'test-runner', '/usr/local/lib/python3.13/site-packages/_pytest/main.py'],
    [2, 'test-hook', '/usr/local/lib/python3.13/site-packages/x.pth'],
    [3, 'reward-file', '/logs/verifier/reward.txt'],
    [3, 'solution-read', '/solution/solve.sh'],
  ]);
  assert.deepEqual(tamperFlags([steps[0]]), [], 'pip installing a package is not tampering');
});

test('flags appear in the report, tbrl replay and the Step Inspector; replay shows escape sequences as text', () => {
  const steps = [step(0, ['/tests/test_outputs.py'], [], 'title\u001b]0;pwned\u0007 and \u001b[2J clear')];
  const header = { type: 'header', schema: TRAJECTORY_SCHEMA, runId: 'r', startedAt: '', task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do' }, policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0', node: 'v' } } as TrajectoryHeader;
  const reward = { tests: 1, total: 1, weights: { tests: 1, judge: 0 }, tampering: tamperFlags(steps) };
  const footer: TrajectoryFooter = { type: 'footer', endedAt: '', endReason: 'finished', steps: 1, reward, usage: { promptTokens: 0, completionTokens: 0, verifierCalls: 0, verifierOutputTokens: 0 } };
  const report = renderReport({ header, steps, footer, policyDescription: 'scripted', trajectoryPath: 't.jsonl' });
  assert.match(report, /Reward tampering[\s\S]*test-files \(step 0\): wrote \/tests\/test_outputs\.py/);
  const replay = sanitizeForTerminal(formatTrajectory({ path: 't', header, steps, footer, truncated: false, warnings: [] }));
  assert.match(replay, /⚠ reward tampering: test-files \(step 0\)/);
  assert.ok(!replay.includes('\u001b'), 'an escape character reached the terminal');
  assert.match(replay, /\\x1b\]0;pwned\\x07/);
  const view = buildStepView('r', steps, footer, 0);
  const rows = view.reward.rows.filter((r) => r.group === 'tampering');
  assert.deepEqual(rows.map((r) => [r.name, r.detail]), [['test-files', 'step 0: wrote /tests/test_outputs.py in the test directory before the tests were copied in']]);
});
