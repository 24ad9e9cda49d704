import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { filterRuns, findRuns, findTasks, summariseRun } from '../../src/extension/discover';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';
import { taskStatus } from '../../src/extension/views/task-status';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'tbrl-disc-'));
  mkdirSync(join(root, 'examples/hello'), { recursive: true });
  writeFileSync(join(root, 'examples/hello/task.yaml'), 'instruction: hi\n');
  mkdirSync(join(root, 'tasks/h1/tests'), { recursive: true });
  writeFileSync(join(root, 'tasks/h1/task.toml'), 'version = "1.0"\n');
  mkdirSync(join(root, 'node_modules/pkg'), { recursive: true });
  writeFileSync(join(root, 'node_modules/pkg/task.yaml'), 'x: 1\n');
  const runs = join(root, 'runs');
  mkdirSync(join(runs, 'a'), { recursive: true });
  writeFileSync(join(runs, 'a/trajectory.jsonl'), syntheticTrajectory(12));
  mkdirSync(join(runs, 'b'), { recursive: true });
  // Killed mid-run: header and steps, a cut last line, no footer.
  const text = syntheticTrajectory(3).split('\n');
  writeFileSync(join(runs, 'b/trajectory.jsonl'), `${text[0].replace('2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z')}\n${text[1]}\n${text[2].slice(0, 40)}`);
  mkdirSync(join(runs, 'c'), { recursive: true });
  writeFileSync(join(runs, 'c/trajectory.jsonl'), 'not json\n');
});
after(() => rmSync(root, { recursive: true, force: true }));

test('tasks: Terminal-Bench and Harbor dirs are found, node_modules is not searched', async () => {
  const tasks = await findTasks(root);
  assert.deepEqual(tasks.map((t) => [t.name, t.format]), [['examples/hello', 'terminal-bench'], ['tasks/h1', 'harbor']]);
});

test('runs: summary from header and footer; an unfinished run has no reward; garbage is skipped; newest first', async () => {
  const runs = await findRuns(join(root, 'runs'));
  assert.equal(runs.length, 2);
  assert.equal(runs[0].steps, undefined, 'the killed run (newer) is unfinished');
  assert.equal(runs[1].steps, 12);
  assert.equal(runs[1].reward, 0.75);
  assert.equal(runs[1].pass, false);
  assert.equal(runs[1].taskId, 'synthetic');
  assert.equal(await summariseRun(join(root, 'runs/c/trajectory.jsonl')), undefined);
});

test('run filters: words, outcome, reward comparison and action text', async () => {
  const runs = await findRuns(join(root, 'runs'));
  assert.equal((await filterRuns(runs, 'unfinished')).length, 1);
  assert.equal((await filterRuns(runs, 'fail reward>=0.7')).length, 1);
  assert.equal((await filterRuns(runs, 'reward>0.8')).length, 0);
  assert.equal((await filterRuns(runs, 'synthetic-12')).length, 1);
  assert.equal((await filterRuns(runs, 'text:pytest')).length, 1, 'only the 12-step run reached the pytest step');
});

test('task status: last validation, reward of the newest finished run of that task (by directory, else by id)', () => {
  const task = { dir: '/ws/examples/hello-world', format: 'terminal-bench' as const, name: 'examples/hello-world' };
  const run = (over: Record<string, unknown>) => ({ trajectory: 't', runId: 'r', taskId: 'hello-world', startedAt: '2026-01-01T00:00:00Z', policy: 'oracle', ...over });
  const validation = { path: task.dir, valid: false, at: '2026-01-03T10:00:00.000Z', oracle: { status: 'passed', score: 1 }, empty: { status: 'failed', score: 1 }, problems: ['empty agent scored 1'], durationMs: 1 };
  const newestFirst = [
    run({ startedAt: '2026-01-04T00:00:00Z', taskDir: task.dir }), // unfinished: no reward
    run({ startedAt: '2026-01-03T00:00:00Z', taskDir: task.dir, reward: 0.35, pass: false, steps: 4 }),
    run({ startedAt: '2026-01-02T00:00:00Z', taskDir: task.dir, reward: 1, pass: true, steps: 3 }),
    run({ startedAt: '2026-01-05T00:00:00Z', taskDir: '/elsewhere/hello-world', reward: 0.9, pass: false, steps: 3 }),
    run({ taskId: 'other', taskDir: '/ws/other', reward: 1, pass: true, steps: 1 }),
  ];
  const s = taskStatus(task, validation, newestFirst);
  assert.equal(s.state, 'invalid');
  assert.equal(s.description, 'terminal-bench · INVALID · reward 0.350', 'the same directory wins over a run of a same-named task elsewhere');
  assert.match(s.tooltip.join('\n'), /Validated 2026-01-03 10:00:00: INVALID \(oracle 1, empty agent 1\)\n {2}empty agent scored 1/);
  assert.match(s.tooltip.join('\n'), /2 finished run\(s\) of 3/);
  // A recorded run from another machine (other absolute path) still counts, by task id.
  const moved = taskStatus(task, undefined, [run({ taskDir: '/old/checkout/examples/hello-world', reward: 1, pass: true, steps: 3 })]);
  assert.deepEqual([moved.state, moved.description], ['unvalidated', 'terminal-bench · reward 1.000']);
  assert.match(moved.tooltip.join('\n'), /Not validated yet/);
  assert.equal(taskStatus(task, undefined, []).description, 'terminal-bench');
});
