import { adjacency } from './compute';
import type { DepgpoCommand, DepgpoInput, DepgpoResult } from './types';
import { agentVisibleResources, runtimeCount } from './visible';

/**
 * The dependency graph as the d3 webview (and `tbrl graph --json`) reads it. Ids are strings so the
 * command nodes ("c<index>") and the resource sinks ("E:file:<path>", "E:port:<n>", "E:process:<p>")
 * share one namespace; edges use d3's `source`/`target`.
 */
export interface GraphView {
  schema: 'tbrl.depgpo-graph/1';
  runId?: string;
  taskId?: string;
  beta: number;
  z: number;
  fallback?: string;
  warnings: string[];
  nodes: GraphNode[];
  edges: Array<{ source: string; target: string; kind: 'file' | 'stdout'; labels: readonly string[]; labelCount: number }>;
  /** The part of E an agent command could have affected (see depgpo/visible.ts). */
  sinks: Array<{ id: string; kind: 'file' | 'port' | 'process'; name: string }>;
  /** The rest of E, the verifier runtime's own reads: counted ("+7 runtime files"), not drawn. */
  runtimeResources?: { files: string[]; processes: string[] };
  /** Command -> E: lines still present in an inspected file, or a checked port/process. */
  sinkEdges: Array<{ source: string; target: string; kind: 'file' | 'port' | 'process' }>;
  /** For every command on a dependency path to E, one shortest such path (command ids, then the sink). */
  paths: Array<{ from: string; path: string[] }>;
  steps: Array<{ index: number; score: number; factor: number; tokens: number; commands: string[] }>;
  /** Fraction of commands on a dependency path to E (the pilot statistic of one trajectory). */
  onPathFraction: number | null;
}

export interface GraphNode {
  id: string;
  index: number;
  step: number;
  action?: number;
  command: string;
  score: number;
  write?: number;
  read?: number;
  portProcess?: number;
  metadata?: number;
  linesWritten: number;
  linesReachingE: number;
  stepScore: number;
  factor: number;
  reads: string[];
  writes: Array<{ path: string; lines: number; created?: boolean; deleted?: boolean }>;
  stdoutValues: string[];
  ports: number[];
  processes: string[];
  onPathToE: boolean;
  incomplete?: string;
}

const MAX_COMMAND_CHARS = 2000;
const nodeId = (c: number): string => `c${c}`;
const sinkId = (kind: string, name: string | number): string => `E:${kind}:${name}`;

/**
 * Shortest dependency path from each command into E. Edges only point forward in time, so one
 * backward sweep settles every node: dist(c) = 1 for a command with a sink edge, else 1 + the
 * smallest dist among its successors.
 */
export function pathsToE(result: DepgpoResult, n: number): { next: Int32Array; onPath: boolean[] } {
  const out = adjacency(n, result.edges);
  const dist = new Float64Array(n).fill(Infinity);
  const next = new Int32Array(n).fill(-1);
  for (let c = n - 1; c >= 0; c--) {
    if (result.sinkFiles[c].length + result.sinkPorts[c].length + result.sinkProcesses[c].length > 0) {
      dist[c] = 1;
      continue;
    }
    for (const v of out[c]) {
      if (dist[v] + 1 < dist[c]) {
        dist[c] = dist[v] + 1;
        next[c] = v;
      }
    }
  }
  return { next, onPath: Array.from(dist, (d) => Number.isFinite(d)) };
}

export function onPathFraction(result: DepgpoResult, n: number): number | null {
  if (n === 0) return null;
  return pathsToE(result, n).onPath.filter(Boolean).length / n;
}

export function buildGraphView(input: DepgpoInput, result: DepgpoResult, meta: { runId?: string; taskId?: string } = {}): GraphView {
  const commands = input.commands;
  const n = commands.length;
  const { next, onPath } = pathsToE(result, n);
  const firstSink = (c: number): string =>
    result.sinkFiles[c].length > 0 ? sinkId('file', result.sinkFiles[c][0]) : result.sinkPorts[c].length > 0 ? sinkId('port', result.sinkPorts[c][0]) : sinkId('process', result.sinkProcesses[c][0]);

  const nodes = commands.map((cmd, c) => node(cmd, c, result, onPath[c]));
  const visible = agentVisibleResources(result.resources, commands);
  const paths: GraphView['paths'] = [];
  for (let c = 0; c < n; c++) {
    if (!onPath[c]) continue;
    const path = [nodeId(c)];
    let u = c;
    while (next[u] >= 0) {
      u = next[u];
      path.push(nodeId(u));
    }
    path.push(firstSink(u));
    paths.push({ from: nodeId(c), path });
  }
  const sinkEdges: GraphView['sinkEdges'] = [];
  result.sinkFiles.forEach((files, c) => files.forEach((f) => sinkEdges.push({ source: nodeId(c), target: sinkId('file', f), kind: 'file' })));
  result.sinkPorts.forEach((ports, c) => ports.forEach((p) => sinkEdges.push({ source: nodeId(c), target: sinkId('port', p), kind: 'port' })));
  result.sinkProcesses.forEach((procs, c) => procs.forEach((p) => sinkEdges.push({ source: nodeId(c), target: sinkId('process', p), kind: 'process' })));

  return {
    schema: 'tbrl.depgpo-graph/1',
    ...(meta.runId ? { runId: meta.runId } : {}),
    ...(meta.taskId ? { taskId: meta.taskId } : {}),
    beta: input.beta ?? 0.5,
    z: result.z,
    ...(result.fallback ? { fallback: result.fallback } : {}),
    warnings: result.warnings,
    nodes,
    edges: result.edges.map((e) => ({ source: nodeId(e.from), target: nodeId(e.to), kind: e.kind, labels: e.labels, labelCount: e.labelCount })),
    sinks: [
      ...visible.files.map((f) => ({ id: sinkId('file', f), kind: 'file' as const, name: f })),
      ...visible.ports.map((p) => ({ id: sinkId('port', p), kind: 'port' as const, name: String(p) })),
      ...visible.processes.map((p) => ({ id: sinkId('process', p), kind: 'process' as const, name: p })),
    ],
    ...(runtimeCount(visible.runtime) ? { runtimeResources: visible.runtime } : {}),
    sinkEdges,
    paths,
    steps: result.stepScores.map((score, t) => ({
      index: t,
      score,
      factor: result.factors[t],
      tokens: input.stepTokens[t] ?? 0,
      commands: commands.flatMap((cmd, c) => (cmd.step === t ? [nodeId(c)] : [])),
    })),
    onPathFraction: n === 0 ? null : onPath.filter(Boolean).length / n,
  };

  function node(cmd: DepgpoCommand, c: number, r: DepgpoResult, on: boolean): GraphNode {
    const s = r.commandScores[c];
    const t = cmd.trace;
    return {
      id: nodeId(c),
      index: c,
      step: cmd.step,
      ...(cmd.action !== undefined ? { action: cmd.action } : {}),
      command: cmd.text.length > MAX_COMMAND_CHARS ? `${cmd.text.slice(0, MAX_COMMAND_CHARS)}…` : cmd.text,
      score: s.score,
      ...(s.write !== undefined ? { write: s.write } : {}),
      ...(s.read !== undefined ? { read: s.read } : {}),
      ...(s.portProcess !== undefined ? { portProcess: s.portProcess } : {}),
      ...(s.metadata !== undefined ? { metadata: s.metadata } : {}),
      linesWritten: s.linesWritten,
      linesReachingE: s.linesReachingE,
      stepScore: r.stepScores[cmd.step] ?? 0,
      factor: r.factors[cmd.step] ?? 1,
      reads: Array.isArray(t?.reads) ? t.reads : [],
      writes: (Array.isArray(t?.writes) ? t.writes : []).map((w) => ({
        path: w.path,
        lines: (Array.isArray(w.hunks) ? w.hunks : []).reduce((a, h) => a + (Number(h?.newLines) || 0), 0),
        ...(w.created ? { created: true } : {}),
        ...(w.deleted ? { deleted: true } : {}),
      })),
      stdoutValues: Array.isArray(t?.stdoutValues) ? t.stdoutValues : [],
      ports: Array.isArray(t?.ports) ? t.ports : [],
      processes: Array.isArray(t?.processes) ? t.processes : [],
      onPathToE: on,
      ...(t?.incomplete ? { incomplete: t.incomplete } : {}),
      ...(t ? {} : { incomplete: 'not traced' }),
    };
  }
}

/** Graphviz DOT: commands as boxes grouped by step, E as double octagons; stdout edges dashed. */
export function toDot(view: GraphView): string {
  const q = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
  const short = (s: string): string => {
    const line = s.split('\n')[0];
    return line.length > 48 ? `${line.slice(0, 47)}…` : line;
  };
  const byId = new Map(view.nodes.map((nd) => [nd.id, nd]));
  const lines = ['digraph depgpo {', '  rankdir=LR;', '  node [shape=box, fontname="monospace", fontsize=10];'];
  for (const st of view.steps) {
    if (st.commands.length === 0) continue;
    lines.push(`  subgraph cluster_step${st.index} {`, `    label=${q(`step ${st.index}  s=${fmt(st.score)}  f=${fmt(st.factor)}`)};`);
    for (const id of st.commands) {
      const nd = byId.get(id);
      if (!nd) continue;
      const style = nd.onPathToE ? ', style=bold' : ', color=gray50, fontcolor=gray40';
      lines.push(`    ${q(id)} [label=${q(`${id}: ${short(nd.command)}\nq=${fmt(nd.score)}`)}${style}];`);
    }
    lines.push('  }');
  }
  for (const s of view.sinks) lines.push(`  ${q(s.id)} [shape=doubleoctagon, label=${q(`E ${s.kind}\n${s.name}`)}];`);
  for (const e of view.edges) {
    const label = e.labels.join(', ') + (e.labelCount > e.labels.length ? ` +${e.labelCount - e.labels.length}` : '');
    lines.push(`  ${q(e.source)} -> ${q(e.target)} [label=${q(short(label))}${e.kind === 'stdout' ? ', style=dashed' : ''}];`);
  }
  for (const e of view.sinkEdges) lines.push(`  ${q(e.source)} -> ${q(e.target)} [color=darkgreen, penwidth=2];`);
  lines.push('}');
  return lines.join('\n') + '\n';
}

/** What `tbrl graph` prints. */
export function formatGraphText(view: GraphView): string {
  const out: string[] = [];
  const runtime = view.runtimeResources ? runtimeCount(view.runtimeResources) : undefined;
  out.push(`E: files ${list(view.sinks.filter((s) => s.kind === 'file').map((s) => s.name))}; ports ${list(view.sinks.filter((s) => s.kind === 'port').map((s) => s.name))}; processes ${list(view.sinks.filter((s) => s.kind === 'process').map((s) => s.name))}${runtime ? `; ${runtime} (the verifier runtime's own reads, in --json)` : ''}`);
  out.push('', `Edges (${view.edges.length}):`);
  for (const e of view.edges) out.push(`  ${e.source} -> ${e.target}  ${e.kind.padEnd(6)} ${e.labels.join(', ')}${e.labelCount > e.labels.length ? ` (+${e.labelCount - e.labels.length})` : ''}`);
  for (const e of view.sinkEdges) out.push(`  ${e.source} -> ${e.target}`);
  out.push('', 'Commands:');
  for (const nd of view.nodes) {
    const parts = [`q=${fmt(nd.score)}`];
    if (nd.write !== undefined) parts.push(`write=${fmt(nd.write)} (${nd.linesReachingE}/${nd.linesWritten} lines)`);
    if (nd.read !== undefined) parts.push(`read=${fmt(nd.read)}`);
    if (nd.portProcess !== undefined) parts.push(`port/proc=${nd.portProcess}`);
    if (nd.metadata !== undefined) parts.push(`metadata=${nd.metadata}`);
    out.push(`  ${nd.id.padEnd(5)} step ${String(nd.step).padEnd(3)} ${nd.onPathToE ? '→E' : '  '} ${parts.join(' ')}  ${oneLine(nd.command)}`);
  }
  out.push('', 'Steps:  index  score    factor   tokens');
  for (const s of view.steps) out.push(`        ${String(s.index).padEnd(6)} ${fmt(s.score).padEnd(8)} ${fmt(s.factor).padEnd(8)} ${s.tokens}`);
  out.push('', `Z = ${fmt(view.z)}${view.fallback ? `   fallback: ${view.fallback} (every f_t = 1)` : ''}`);
  if (view.onPathFraction !== null) out.push(`Commands on a dependency path to E: ${view.nodes.filter((x) => x.onPathToE).length}/${view.nodes.length} (${fmt(view.onPathFraction)})`);
  for (const w of view.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(4);
}

function list(xs: string[]): string {
  return xs.length === 0 ? '(none)' : xs.join(', ');
}

function oneLine(s: string): string {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > 70 ? `${line.slice(0, 69)}…` : line;
}
