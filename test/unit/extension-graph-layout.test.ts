import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layoutGraph, pathEdgeKeys, COLUMN_WIDTH, ROW_HEIGHT } from '../../webview/trace-graph/layout';
import { syntheticGraph } from '../helpers/graph-fixture';

test('layers follow the longest dependency path; sinks form the last layer', () => {
  // c0 -> c1 -> c3, c0 -> c2, c2 -> c3 ; c4 isolated ; c3 -> E
  const g = {
    nodes: [0, 1, 2, 3, 4].map((i) => ({ id: `c${i}` })),
    edges: [['c0', 'c1'], ['c1', 'c3'], ['c0', 'c2'], ['c2', 'c3']].map(([source, target]) => ({ source, target })),
    sinks: [{ id: 'E:file:/app/out', kind: 'file', name: '/app/out' }],
    sinkEdges: [{ source: 'c3', target: 'E:file:/app/out', kind: 'file' }],
  } as unknown as Parameters<typeof layoutGraph>[0];
  const l = layoutGraph(g);
  const layer = (id: string) => l.positions.get(id)!.layer;
  assert.deepEqual(['c0', 'c1', 'c2', 'c3', 'c4'].map(layer), [0, 1, 1, 2, 0]);
  assert.equal(layer('E:file:/app/out'), 3);
  assert.ok(l.positions.get('E:file:/app/out')!.x > l.positions.get('c3')!.x);
  assert.equal(l.layers, 4);
});

test('no two nodes overlap and tall layers wrap into columns (2,000 commands)', () => {
  const g = syntheticGraph(2000);
  const l = layoutGraph(g, { maxRows: 40 });
  assert.equal(l.positions.size, g.nodes.length + g.sinks.length);
  const seen = new Set<string>();
  for (const p of l.positions.values()) {
    const key = `${p.x / COLUMN_WIDTH},${p.y / ROW_HEIGHT}`;
    assert.ok(!seen.has(key), `two nodes at ${key}`);
    seen.add(key);
    assert.ok(p.y < 40 * ROW_HEIGHT);
  }
  for (const e of g.edges) assert.ok(l.positions.get(e.target)!.layer > l.positions.get(e.source)!.layer, 'edges point to a later layer');
});

test('path edges are the consecutive pairs of each path into E', () => {
  const keys = pathEdgeKeys([{ from: 'c0', path: ['c0', 'c2', 'E:file:/a'] }, { from: 'c2', path: ['c2', 'E:file:/a'] }]);
  assert.deepEqual([...keys].sort(), ['c0>c2', 'c2>E:file:/a']);
});
