import type { GraphNode, GraphView } from './protocol';

/**
 * Folding a big trace graph into summary nodes. A group is a maximal run of consecutive commands
 * (execution order) that are not on a dependency path into E and, with `independent`, have no
 * dependency edge at all. Because a group is a contiguous index range and every edge points forward
 * in time, an edge that crosses its boundary enters from an earlier command or leaves to a later
 * one, so the folded graph is still a forward-only DAG and the layered layout applies unchanged.
 * Pure: main.ts draws what foldGraph returns; the unit tests check it without a browser.
 */
export type FoldBy = 'independent' | 'off-path';

/** Runs shorter than this stay as they are: folding two commands into one node hides more than it saves. */
export const MIN_FOLD = 3;
/** A first look at a graph with more commands than this starts folded (the user's choice is kept after that). */
export const AUTO_FOLD_COMMANDS = 400;

export interface FoldGroup {
  /** `fold:<id of its first command>`: stable while a live run appends commands after it. */
  id: string;
  by: FoldBy;
  members: string[];
  steps: { first: number; last: number };
  /** Dependency edges with both ends inside the group (hidden when it is folded). */
  innerEdges: number;
  edgesIn: number;
  edgesOut: number;
  factor: { min: number; max: number; mean: number };
  firstCommand: string;
  lastCommand: string;
}

export interface FoldState {
  foldBy: FoldBy;
  /** Groups are folded by default (new groups of a live run too)… */
  collapseAll: boolean;
  /** …except these, whose state the user flipped one by one. */
  exceptions: string[];
}

export type FoldedItem = { kind: 'command'; id: string; node: GraphNode } | { kind: 'summary'; id: string; group: FoldGroup };

export interface FoldedEdge {
  source: string;
  target: string;
  kind: 'file' | 'stdout';
  labels: string[];
  labelCount: number;
  /** How many edges of the full graph this one stands for (more than 1 only at a summary node). */
  count: number;
}

export interface FoldedGraph {
  /** Commands and summary nodes in execution order (the order the layout needs). */
  nodes: FoldedItem[];
  edges: FoldedEdge[];
  sinks: GraphView['sinks'];
  sinkEdges: Array<{ source: string; target: string; kind: GraphView['sinkEdges'][number]['kind']; count: number }>;
  groups: FoldGroup[];
  /** Group id of every grouped command, folded or not. */
  groupOf: Map<string, string>;
  /** Id of the node that shows a command: itself, or the summary it is folded into. */
  shownAs: Map<string, string>;
  folded: number;
  hiddenCommands: number;
}

export interface FoldOptions {
  minSize?: number;
  /**
   * The last commands never fold. A live run passes 1: the command it just ran has no consumer yet,
   * so it looks independent, and folding it would hide the newest work as it appears.
   */
  keepTail?: number;
}

export function foldGroups(g: Pick<GraphView, 'nodes' | 'edges' | 'sinkEdges'>, by: FoldBy, opts: FoldOptions = {}): FoldGroup[] {
  const minSize = opts.minSize ?? MIN_FOLD;
  const foldableCount = g.nodes.length - Math.max(0, opts.keepTail ?? 0);
  const touched = new Set<string>();
  if (by === 'independent') {
    for (const e of g.edges) touched.add(e.source).add(e.target);
    for (const e of g.sinkEdges) touched.add(e.source);
  }
  const foldable = (n: GraphNode): boolean => !n.onPathToE && !touched.has(n.id);
  const runs: GraphNode[][] = [];
  let run: GraphNode[] = [];
  for (const [i, n] of g.nodes.entries()) {
    if (i < foldableCount && foldable(n)) {
      run.push(n);
      continue;
    }
    if (run.length >= minSize) runs.push(run);
    run = [];
  }
  if (run.length >= minSize) runs.push(run);

  const groups = runs.map((members): FoldGroup => {
    const factors = members.map((m) => m.factor);
    return {
      id: `fold:${members[0].id}`,
      by,
      members: members.map((m) => m.id),
      steps: { first: members[0].step, last: members[members.length - 1].step },
      innerEdges: 0,
      edgesIn: 0,
      edgesOut: 0,
      factor: { min: Math.min(...factors), max: Math.max(...factors), mean: factors.reduce((a, b) => a + b, 0) / factors.length },
      firstCommand: members[0].command,
      lastCommand: members[members.length - 1].command,
    };
  });
  const groupOf = new Map<string, FoldGroup>();
  for (const grp of groups) for (const m of grp.members) groupOf.set(m, grp);
  for (const e of g.edges) {
    const s = groupOf.get(e.source);
    const t = groupOf.get(e.target);
    if (s && s === t) s.innerEdges++;
    else {
      if (s) s.edgesOut++;
      if (t) t.edgesIn++;
    }
  }
  return groups;
}

export function isFolded(state: FoldState, groupId: string): boolean {
  return state.collapseAll !== state.exceptions.includes(groupId);
}

/** Folds an unfolded group or unfolds a folded one, leaving every other group as it is. */
export function toggleGroup(state: FoldState, groupId: string): FoldState {
  const exceptions = state.exceptions.includes(groupId) ? state.exceptions.filter((x) => x !== groupId) : [...state.exceptions, groupId];
  return { ...state, exceptions };
}

/** The toolbar toggle: unfold everything when anything is folded, else fold every group. */
export function toggleAll(state: FoldState, groups: readonly FoldGroup[]): FoldState {
  const anyFolded = groups.some((grp) => isFolded(state, grp.id));
  return { ...state, collapseAll: !anyFolded, exceptions: [] };
}

/**
 * The graph as drawn: each folded group replaced by one summary node, edges that crossed its
 * boundary redrawn to the summary (parallel ones merged, with a count), edges inside it dropped.
 */
export function foldGraph(g: Pick<GraphView, 'nodes' | 'edges' | 'sinks' | 'sinkEdges'>, groups: readonly FoldGroup[], folded: (groupId: string) => boolean): FoldedGraph {
  const groupOf = new Map<string, string>();
  const shownAs = new Map<string, string>();
  const byFirst = new Map<string, FoldGroup>();
  let foldedCount = 0;
  let hidden = 0;
  for (const grp of groups) {
    for (const m of grp.members) groupOf.set(m, grp.id);
    if (!folded(grp.id)) continue;
    foldedCount++;
    hidden += grp.members.length;
    byFirst.set(grp.members[0], grp);
    for (const m of grp.members) shownAs.set(m, grp.id);
  }
  const nodes: FoldedItem[] = [];
  for (const n of g.nodes) {
    const summary = byFirst.get(n.id);
    if (summary) nodes.push({ kind: 'summary', id: summary.id, group: summary });
    else if (!shownAs.has(n.id)) nodes.push({ kind: 'command', id: n.id, node: n });
  }
  for (const n of g.nodes) if (!shownAs.has(n.id)) shownAs.set(n.id, n.id);

  const edges = new Map<string, FoldedEdge>();
  for (const e of g.edges) {
    const source = shownAs.get(e.source) ?? e.source;
    const target = shownAs.get(e.target) ?? e.target;
    if (source === target) continue;
    const key = `${source}>${target}>${e.kind}`;
    const had = edges.get(key);
    if (!had) {
      edges.set(key, { source, target, kind: e.kind, labels: [...e.labels], labelCount: e.labelCount, count: 1 });
      continue;
    }
    had.count++;
    for (const l of e.labels) if (!had.labels.includes(l) && had.labels.length < 5) had.labels.push(l);
    // Parallel edges often carry the same label (three readers of one file): count labels, not edges; a lower bound past the kept five.
    had.labelCount = Math.max(had.labelCount, e.labelCount, had.labels.length);
  }
  const sinkEdges = new Map<string, FoldedGraph['sinkEdges'][number]>();
  for (const e of g.sinkEdges) {
    const source = shownAs.get(e.source) ?? e.source;
    const key = `${source}>${e.target}`;
    const had = sinkEdges.get(key);
    if (had) had.count++;
    else sinkEdges.set(key, { source, target: e.target, kind: e.kind, count: 1 });
  }
  return { nodes, edges: [...edges.values()], sinks: g.sinks, sinkEdges: [...sinkEdges.values()], groups: [...groups], groupOf, shownAs, folded: foldedCount, hiddenCommands: hidden };
}

/** "steps 12–40" or "step 12". */
export function stepRange(grp: Pick<FoldGroup, 'steps'>): string {
  return grp.steps.first === grp.steps.last ? `step ${grp.steps.first}` : `steps ${grp.steps.first}–${grp.steps.last}`;
}

/** The hover of a summary node: what was folded, how it connects, how to unfold it. */
export function describeGroup(grp: FoldGroup): string {
  const what = grp.by === 'independent' ? 'independent commands: no dependency edge, not on a path into E' : 'commands not on any dependency path into E';
  const f = grp.factor;
  const lines = [
    `${stepRange(grp)}: ${grp.members.length} ${what}`,
    `edges: ${grp.innerEdges} inside, ${grp.edgesIn} in, ${grp.edgesOut} out · factor ${f.min === f.max ? f.min.toFixed(2) : `${f.min.toFixed(2)}–${f.max.toFixed(2)}`}`,
    `first (${grp.members[0]}): ${firstLine(grp.firstCommand)}`,
    `last (${grp.members[grp.members.length - 1]}): ${firstLine(grp.lastCommand)}`,
    'click to unfold · alt-click one of its commands to fold them again',
  ];
  return lines.join('\n');
}

function firstLine(s: string): string {
  const line = s.split('\n')[0];
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
