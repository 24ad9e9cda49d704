import type { GraphView, GraphNode } from '../../src/core/depgpo/view';

/**
 * A GraphView of `n` commands shaped like a long agent run: chains of file edges (each command
 * usually reads what the one 1–3 steps earlier wrote), some stdout edges, a handful of sinks fed by
 * the last commands of a few chains.
 */
export function syntheticGraph(n: number, seed = 7): GraphView {
  let s = seed;
  const rand = (): number => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const nodes: GraphNode[] = [];
  const edges: GraphView['edges'] = [];
  for (let i = 0; i < n; i++) {
    nodes.push({
      id: `c${i}`, index: i, step: i, command: `python3 step_${i}.py --input /app/data/${i % 50}.txt`, score: rand(), linesWritten: 3, linesReachingE: i % 7 === 0 ? 2 : 0,
      stepScore: rand(), factor: 0.5 + rand(), reads: [`/app/data/${i % 50}.txt`], writes: [{ path: `/app/work/${i}.txt`, lines: 3 }], stdoutValues: [], ports: [], processes: [], onPathToE: false,
    });
    if (i > 0 && rand() < 0.8) edges.push({ source: `c${Math.max(0, i - 1 - Math.floor(rand() * 3))}`, target: `c${i}`, kind: 'file', labels: [`/app/work/${i}.txt`], labelCount: 1 });
    if (i > 5 && rand() < 0.1) edges.push({ source: `c${i - 5}`, target: `c${i}`, kind: 'stdout', labels: ['8080'], labelCount: 1 });
  }
  const sinks: GraphView['sinks'] = [];
  const sinkEdges: GraphView['sinkEdges'] = [];
  const paths: GraphView['paths'] = [];
  for (let k = 0; k < 5 && n > 0; k++) {
    const id = `E:file:/app/out/${k}.json`;
    sinks.push({ id, kind: 'file', name: `/app/out/${k}.json` });
    const src = n - 1 - k * 3;
    if (src >= 0) {
      sinkEdges.push({ source: `c${src}`, target: id, kind: 'file' });
      nodes[src].onPathToE = true;
      paths.push({ from: `c${src}`, path: [`c${src}`, id] });
    }
  }
  return {
    schema: 'tbrl.depgpo-graph/1', runId: `synthetic-${n}`, taskId: 'synthetic', beta: 0.5, z: 1, warnings: [], nodes, edges, sinks, sinkEdges, paths,
    steps: nodes.map((nd) => ({ index: nd.step, score: nd.stepScore, factor: nd.factor, tokens: 10, commands: [nd.id] })), onPathFraction: paths.length / Math.max(1, n),
  };
}
