import type { GraphView } from './protocol';

/**
 * Layered DAG layout. Dependency edges only point forward in time, so each command's layer is one
 * more than its deepest predecessor (longest path, one pass in index order); E's sinks form the last
 * layer. Inside a layer, nodes are ordered by the mean row of their predecessors (one barycentre
 * sweep) so that chains run straight. Tall layers wrap into sub-columns, which keeps a run of
 * thousands of mostly independent commands a readable grid rather than one endless column.
 */
export interface Position { x: number; y: number; layer: number }

export interface Layout {
  positions: Map<string, Position>;
  width: number;
  height: number;
  layers: number;
}

export const COLUMN_WIDTH = 190;
export const ROW_HEIGHT = 30;
export const MAX_ROWS = 40;

/** What the layout reads: ids in time order and the edges between them (a GraphView or a folded graph). */
export interface LayoutInput {
  nodes: ReadonlyArray<{ id: string }>;
  edges: ReadonlyArray<{ source: string; target: string }>;
  sinks: ReadonlyArray<{ id: string }>;
  sinkEdges: ReadonlyArray<{ source: string; target: string }>;
}

export function layoutGraph(g: LayoutInput, opts: { maxRows?: number } = {}): Layout {
  const maxRows = opts.maxRows ?? MAX_ROWS;
  const index = new Map<string, number>();
  g.nodes.forEach((n, i) => index.set(n.id, i));
  const preds: number[][] = g.nodes.map(() => []);
  for (const e of g.edges) {
    const s = index.get(e.source);
    const t = index.get(e.target);
    if (s !== undefined && t !== undefined && s !== t) preds[t].push(s);
  }
  const layer = new Int32Array(g.nodes.length);
  // Index order is time order; an edge that points backwards (never written by DepGPO) is ignored rather than looping.
  for (let i = 0; i < g.nodes.length; i++) {
    let l = 0;
    for (const p of preds[i]) if (p < i) l = Math.max(l, layer[p] + 1);
    layer[i] = l;
  }
  const layerCount = g.nodes.length ? Math.max(...layer) + 1 : 0;
  const byLayer: number[][] = Array.from({ length: layerCount }, () => []);
  for (let i = 0; i < g.nodes.length; i++) byLayer[layer[i]].push(i);

  const positions = new Map<string, Position>();
  const row = new Float64Array(g.nodes.length);
  let column = 0;
  let maxRow = 0;
  const place = (ids: string[], rows: number[], l: number): void => {
    ids.forEach((id, k) => {
      const sub = Math.floor(k / maxRows);
      const r = k % maxRows;
      rows[k] = r;
      positions.set(id, { x: (column + sub) * COLUMN_WIDTH, y: r * ROW_HEIGHT, layer: l });
      maxRow = Math.max(maxRow, r);
    });
    column += Math.max(1, Math.ceil(ids.length / maxRows));
  };
  for (let l = 0; l < layerCount; l++) {
    const members = byLayer[l];
    if (l > 0) {
      const bary = new Map<number, number>();
      for (const i of members) {
        const ps = preds[i].filter((p) => p < i);
        bary.set(i, ps.length ? ps.reduce((a, p) => a + row[p], 0) / ps.length : Number.POSITIVE_INFINITY);
      }
      members.sort((a, b) => (bary.get(a)! - bary.get(b)!) || a - b);
    }
    const rows: number[] = [];
    place(members.map((i) => g.nodes[i].id), rows, l);
    members.forEach((i, k) => (row[i] = rows[k]));
  }
  if (g.sinks.length) {
    // Sinks sit level with the commands that feed them.
    const feed = new Map<string, number[]>();
    for (const e of g.sinkEdges) {
      const s = index.get(e.source);
      if (s !== undefined) feed.set(e.target, [...(feed.get(e.target) ?? []), row[s]]);
    }
    const sinks = [...g.sinks].sort((a, b) => mean(feed.get(a.id)) - mean(feed.get(b.id)) || a.id.localeCompare(b.id));
    place(sinks.map((s) => s.id), [], layerCount);
  }
  return { positions, width: column * COLUMN_WIDTH, height: (maxRow + 1) * ROW_HEIGHT, layers: layerCount + (g.sinks.length ? 1 : 0) };
}

function mean(xs: number[] | undefined): number {
  return xs && xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.POSITIVE_INFINITY;
}

/** Edges (command→command and command→sink) that lie on a shortest dependency path into E. */
export function pathEdgeKeys(paths: GraphView['paths']): Set<string> {
  const keys = new Set<string>();
  for (const p of paths) for (let i = 0; i + 1 < p.path.length; i++) keys.add(`${p.path[i]}>${p.path[i + 1]}`);
  return keys;
}
