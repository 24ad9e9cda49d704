import { test } from 'node:test';
import assert from 'node:assert/strict';
import { foldGraph, foldGroups, isFolded, toggleAll, toggleGroup, describeGroup, MIN_FOLD, type FoldState } from '../../webview/trace-graph/collapse';
import { layoutGraph, COLUMN_WIDTH, ROW_HEIGHT } from '../../webview/trace-graph/layout';
import type { GraphView, GraphNode } from '../../src/core/depgpo/view';
import { syntheticGraph } from '../helpers/graph-fixture';

/** A small GraphView: commands c0..c(n-1) one per step, the given edges, E fed by `sinkFrom`. */
function graph(n: number, edges: Array<[number, number, 'file' | 'stdout']>, onPath: number[], sinkFrom: number[] = []): GraphView {
  const nodes = Array.from({ length: n }, (_v, i): GraphNode => ({
    id: `c${i}`, index: i, step: i, command: `cmd ${i}\nsecond line`, score: 0, linesWritten: 0, linesReachingE: 0, stepScore: 0, factor: 1 + i / 10,
    reads: [], writes: [], stdoutValues: [], ports: [], processes: [], onPathToE: onPath.includes(i),
  }));
  const sinks = sinkFrom.length ? [{ id: 'E:file:/app/out', kind: 'file' as const, name: '/app/out' }] : [];
  return {
    schema: 'tbrl.depgpo-graph/1', beta: 0.5, z: 1, warnings: [], nodes,
    edges: edges.map(([s, t, kind]) => ({ source: `c${s}`, target: `c${t}`, kind, labels: [`/f${s}`], labelCount: 1 })),
    sinks, sinkEdges: sinkFrom.map((s) => ({ source: `c${s}`, target: 'E:file:/app/out', kind: 'file' as const })),
    paths: [], steps: [], onPathFraction: null,
  };
}

const all = (): boolean => true;

test('independent: runs of 3+ consecutive commands with no edge and off the paths into E fold; edges, E paths and short runs break them', () => {
  // c0..c3 independent (4), c4 -> c5 edge, c6 c7 independent (only 2), c8 on a path, c9..c11 independent (3).
  const g = graph(12, [[4, 5, 'file']], [8], [8]);
  const groups = foldGroups(g, 'independent');
  assert.deepEqual(groups.map((x) => x.members), [['c0', 'c1', 'c2', 'c3'], ['c9', 'c10', 'c11']]);
  assert.deepEqual(groups.map((x) => x.id), ['fold:c0', 'fold:c9']);
  assert.deepEqual(groups[0].steps, { first: 0, last: 3 });
  assert.deepEqual(groups[0].factor, { min: 1, max: 1.3, mean: 1.15 });
  assert.equal(MIN_FOLD, 3);
  // A run shorter than the minimum is left alone; a lower minimum folds it.
  assert.deepEqual(foldGroups(g, 'independent', { minSize: 2 }).map((x) => x.members.length), [4, 2, 3]);
  // A live run keeps its newest command out of any group (its consumers have not run yet).
  assert.deepEqual(foldGroups(g, 'independent', { keepTail: 1 }).map((x) => x.members), [['c0', 'c1', 'c2', 'c3']]);
  assert.deepEqual(foldGroups(g, 'independent', { keepTail: 1, minSize: 2 }).map((x) => x.members), [['c0', 'c1', 'c2', 'c3'], ['c6', 'c7'], ['c9', 'c10']]);
});

test('off-path: commands with edges fold too, and the edges across the group are drawn to its summary, merged with a count', () => {
  // c0 -> c1 (on path) -> E ; c1 -> c2, c1 -> c3, c1 -> c4 (three readers of c1's file, off the path) ; c2 -> c3 inside ; c4 -> c6 leaves.
  // c5 on the path (fed by c0) ends the run, c6 c7 c8 are off the path.
  const g = graph(9, [[0, 1, 'file'], [1, 2, 'file'], [1, 3, 'file'], [1, 4, 'stdout'], [2, 3, 'file'], [4, 6, 'file'], [0, 5, 'file']], [0, 1, 5], [1, 5]);
  const groups = foldGroups(g, 'off-path');
  assert.deepEqual(groups.map((x) => x.members), [['c2', 'c3', 'c4'], ['c6', 'c7', 'c8']]);
  assert.deepEqual([groups[0].innerEdges, groups[0].edgesIn, groups[0].edgesOut], [1, 3, 1]);
  assert.deepEqual([groups[1].innerEdges, groups[1].edgesIn, groups[1].edgesOut], [0, 1, 0]);
  // With edges, independent folding finds nothing here.
  assert.deepEqual(foldGroups(g, 'independent'), []);

  const f = foldGraph(g, groups, all);
  assert.deepEqual(f.nodes.map((x) => x.id), ['c0', 'c1', 'fold:c2', 'c5', 'fold:c6']);
  assert.deepEqual(f.edges.map((e) => [e.source, e.target, e.kind, e.count]), [
    ['c0', 'c1', 'file', 1],
    ['c1', 'fold:c2', 'file', 2],
    ['c1', 'fold:c2', 'stdout', 1],
    ['fold:c2', 'fold:c6', 'file', 1],
    ['c0', 'c5', 'file', 1],
  ]);
  assert.deepEqual(f.edges[1].labels, ['/f1'], 'both edges carry /f1: one label');
  assert.equal(f.edges[1].labelCount, 1);
  assert.deepEqual(f.sinkEdges.map((e) => [e.source, e.count]), [['c1', 1], ['c5', 1]]);
  assert.equal(f.shownAs.get('c3'), 'fold:c2');
  assert.equal(f.shownAs.get('c5'), 'c5');
  assert.equal(f.groupOf.get('c7'), 'fold:c6');
  assert.deepEqual([f.folded, f.hiddenCommands], [2, 6]);

  // The folded graph is still forward-only, so the layered layout puts every edge's target in a later layer.
  const l = layoutGraph(f);
  for (const e of f.edges) assert.ok(l.positions.get(e.target)!.layer > l.positions.get(e.source)!.layer, `${e.source} -> ${e.target}`);
});

test('only the folded groups are replaced; an unfolded group shows its commands and their own edges', () => {
  const g = graph(9, [[0, 1, 'file'], [1, 2, 'file'], [1, 3, 'file'], [2, 3, 'file'], [4, 6, 'file']], [0, 1], [1]);
  const groups = foldGroups(g, 'off-path');
  assert.deepEqual(groups.map((x) => x.id), ['fold:c2']);
  const f = foldGraph(g, groups, () => false);
  assert.deepEqual(f.nodes.map((x) => x.id), g.nodes.map((x) => x.id));
  assert.equal(f.edges.length, g.edges.length);
  assert.deepEqual([f.folded, f.hiddenCommands], [0, 0]);
  assert.equal(f.groupOf.get('c4'), 'fold:c2', 'an unfolded command still knows its group (for folding it back)');
});

test('fold state: collapse-all with per-group exceptions; the toolbar toggle unfolds everything when anything is folded', () => {
  const g = graph(12, [[4, 5, 'file']], [8], [8]);
  const groups = foldGroups(g, 'independent');
  let s: FoldState = { foldBy: 'independent', collapseAll: false, exceptions: [] };
  assert.deepEqual(groups.map((x) => isFolded(s, x.id)), [false, false]);
  s = toggleAll(s, groups);
  assert.deepEqual(groups.map((x) => isFolded(s, x.id)), [true, true]);
  s = toggleGroup(s, 'fold:c9'); // click on a summary unfolds that one only
  assert.deepEqual(groups.map((x) => isFolded(s, x.id)), [true, false]);
  assert.deepEqual(foldGraph(g, groups, (id) => isFolded(s, id)).nodes.map((x) => x.id), ['fold:c0', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'c10', 'c11']);
  s = toggleAll(s, groups); // something is folded: expand all
  assert.deepEqual([s.collapseAll, s.exceptions], [false, []]);
  s = toggleGroup(s, 'fold:c0'); // alt-click folds one group while the rest stay open
  assert.deepEqual(groups.map((x) => isFolded(s, x.id)), [true, false]);
  s = toggleGroup(s, 'fold:c0');
  assert.deepEqual(groups.map((x) => isFolded(s, x.id)), [false, false]);
});

test('a live run that grows keeps the ids of its groups, so what the user folded stays folded', () => {
  const small = graph(6, [], [], []);
  const grown = graph(10, [[2, 8, 'file']], [], []);
  assert.deepEqual(foldGroups(small, 'independent').map((x) => [x.id, x.members.length]), [['fold:c0', 6]]);
  // c2 gained a consumer: the run splits at it; the part before keeps the id, the part after is a new group.
  assert.deepEqual(foldGroups(grown, 'independent').map((x) => [x.id, x.members.length]), [['fold:c3', 5]]);
  const grownAtEnd = graph(10, [], [], []);
  assert.deepEqual(foldGroups(grownAtEnd, 'independent').map((x) => [x.id, x.members.length]), [['fold:c0', 10]]);
});

test('the summary hover names the steps, the count, the edges, the factor range and how to unfold', () => {
  const g = graph(9, [[0, 1, 'file'], [1, 2, 'file'], [1, 3, 'file'], [2, 3, 'file'], [4, 6, 'file']], [0, 1], [1]);
  const [grp] = foldGroups(g, 'off-path');
  const text = describeGroup(grp);
  assert.match(text, /^steps 2–8: 7 commands not on any dependency path into E\n/);
  assert.match(text, /edges: 2 inside, 2 in, 0 out · factor 1\.20–1\.80/);
  assert.match(text, /first \(c2\): cmd 2\n/);
  assert.match(text, /last \(c8\): cmd 8\n/);
  assert.match(text, /click to unfold/);
});

test('2,000 commands: folded, every command is shown by exactly one node, the layout does not overlap and is smaller', () => {
  const g = syntheticGraph(2000);
  for (const by of ['independent', 'off-path'] as const) {
    const groups = foldGroups(g, by);
    const f = foldGraph(g, groups, all);
    const drawn = new Set(f.nodes.map((x) => x.id));
    for (const n of g.nodes) assert.ok(drawn.has(f.shownAs.get(n.id)!), `${n.id} is shown`);
    assert.equal(f.nodes.length, g.nodes.length - f.hiddenCommands + f.folded);
    const l = layoutGraph(f);
    const seen = new Set<string>();
    for (const p of l.positions.values()) {
      const key = `${p.x / COLUMN_WIDTH},${p.y / ROW_HEIGHT}`;
      assert.ok(!seen.has(key), `${by}: two nodes at ${key}`);
      seen.add(key);
    }
    for (const e of f.edges) assert.ok(l.positions.get(e.target)!.layer > l.positions.get(e.source)!.layer);
  }
  // Off the paths into E, nearly all of this graph folds (5 commands feed E).
  const f = foldGraph(g, foldGroups(g, 'off-path'), all);
  assert.ok(f.nodes.length < 20, `${f.nodes.length} nodes drawn`);
  assert.ok(layoutGraph(f).width < layoutGraph(g).width / 5);
});
