import type { GraphView, GraphNode } from '../../src/core/depgpo/view';
import type { StepRecord } from '../../src/core/trajectory/schema';

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

/**
 * The recorded oracle run of examples/hello-world (trajectory.jsonl text) with probing commands
 * added, so its trace graph has runs to fold: after step 0 (`mkdir`) three commands that touch no
 * file the agent wrote (`ls`, `pwd`, `cat` of an image file), after the script is written three that
 * read it but feed nothing into E. Steps: 0 mkdir, 1–3 probes, 4 writes the script, 5–7 read it,
 * 8 runs it. Independent run: c0–c3; off the paths into E: c0–c3 and c5–c7 (3 edges in from c4).
 */
export function probedOracleTrajectory(jsonl: string): string {
  const records = jsonl.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; index?: number; steps?: number; depgpo?: unknown } & Record<string, unknown>);
  const header = records[0];
  const steps = records.filter((r) => r.type === 'step') as unknown as StepRecord[];
  const footer = records.find((r) => r.type === 'footer');
  const probe = (cmd: string, reads: string[]): StepRecord => {
    const s = structuredClone(steps[0]);
    const text = `<bash>\ncmd: ${JSON.stringify(cmd)}\n</bash>`;
    s.candidates = [{ text, parses: true }];
    s.chosenText = text;
    const a = s.actions[0];
    a.input = { ...a.input, cmd };
    a.trace = { reads, writes: [], stdoutValues: [], ports: [], processes: [], probedPorts: [], inspectedProcesses: [] } as unknown as typeof a.trace;
    return s;
  };
  const out = [
    steps[0],
    probe('ls /app', []),
    probe('pwd', []),
    probe('cat /app/data/notes.md', ['/app/data/notes.md']),
    steps[1],
    probe('wc -l /app/wordfreq.py', ['/app/wordfreq.py']),
    probe('head -3 /app/wordfreq.py', ['/app/wordfreq.py']),
    probe('grep -c import /app/wordfreq.py', ['/app/wordfreq.py']),
    steps[2],
  ].map((s, i) => ({ ...s, index: i }));
  const lines: unknown[] = [header, ...out];
  // The footer's step-level DepGPO record describes the three-step run; the graph is recomputed from the steps.
  if (footer) lines.push({ ...footer, steps: out.length, depgpo: undefined });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}
