import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { graphWithRun } from '../../src/extension/graph/data';
import { foldGroups } from '../../webview/trace-graph/collapse';
import { probedOracleTrajectory } from '../helpers/graph-fixture';

const dir = mkdtempSync(join(tmpdir(), 'tbrl-graph-data-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const oracle = readFileSync('test/e2e/fixtures/hello-world-oracle/trajectory.jsonl', 'utf8');
const lines = oracle.trimEnd().split('\n');
const write = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

test('a live run that has not written its trajectory yet is an empty graph that says why; a finished run\'s missing file is an error', async () => {
  const missing = join(dir, 'not-yet', 'trajectory.jsonl');
  const { graph, run } = await graphWithRun(missing, true);
  assert.equal(graph.nodes.length, 0);
  assert.deepEqual(graph.sinks, []);
  assert.equal(run.live, true);
  assert.match(run.waiting ?? '', /has not written its trajectory yet/);
  await assert.rejects(graphWithRun(missing, false), /Cannot read the trajectory/);
  // The sandbox is up but the header line is not complete yet.
  const partial = write('partial.jsonl', lines[0].slice(0, 40));
  assert.match((await graphWithRun(partial, true)).run.waiting ?? '', /not written/);
});

test('a live run at entry (header only) and after two steps: commands but no E, and the run info says so', async () => {
  const entry = await graphWithRun(write('entry.jsonl', `${lines[0]}\n`), true);
  assert.equal(entry.graph.nodes.length, 0);
  assert.deepEqual(entry.run, { live: true, steps: 0, ended: false, eKnown: false });
  const two = await graphWithRun(write('two.jsonl', `${lines.slice(0, 3).join('\n')}\n`), true);
  assert.deepEqual(two.graph.nodes.map((n) => n.id), ['c0', 'c1']);
  assert.deepEqual(two.graph.sinks, []);
  assert.equal(two.graph.paths.length, 0);
  assert.deepEqual(two.run, { live: true, steps: 2, ended: false, eKnown: false });
});

test('the finished run has E and is not live, even while a session still reports it live', async () => {
  const done = await graphWithRun(write('done.jsonl', oracle), true);
  assert.deepEqual(done.run, { live: false, steps: 3, ended: true, eKnown: true });
  assert.ok(done.graph.sinks.some((s) => s.id === 'E:file:/app/out/counts.json'));
  assert.deepEqual(done.graph.nodes.filter((n) => n.onPathToE).map((n) => n.id), ['c1', 'c2']);
});

test('the probed oracle run (the e2e fixture) has the runs to fold its doc comment promises', async () => {
  const { graph } = await graphWithRun(write('probed.jsonl', probedOracleTrajectory(oracle)), false);
  assert.equal(graph.nodes.length, 9);
  assert.deepEqual(graph.nodes.filter((n) => n.onPathToE).map((n) => n.id), ['c4', 'c8']);
  assert.deepEqual(graph.edges.map((e) => `${e.source}>${e.target}`).sort(), ['c4>c5', 'c4>c6', 'c4>c7', 'c4>c8']);
  assert.deepEqual(foldGroups(graph, 'independent').map((g) => g.members), [['c0', 'c1', 'c2', 'c3']]);
  assert.deepEqual(foldGroups(graph, 'off-path').map((g) => [g.id, g.members.length, g.edgesIn]), [['fold:c0', 4, 0], ['fold:c5', 3, 3]]);
});
