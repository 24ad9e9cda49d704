import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { filterRuns, findRuns, findTasks, summariseRun } from '../../src/extension/discover';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';

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
