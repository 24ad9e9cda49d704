import { select, type Selection } from 'd3-selection';
import { zoom, zoomIdentity, zoomTransform, type ZoomTransform } from 'd3-zoom';
import { scaleSequential } from 'd3-scale';
import { interpolateRdYlGn } from 'd3-scale-chromatic';
import { Endpoint } from '../shared/ipc';
import { GetGraph, GraphChanged, SelectStep, StepChanged, type GraphPayload, type GraphView, type TraceGraphState } from './protocol';
import { layoutGraph, pathEdgeKeys, COLUMN_WIDTH, type Position } from './layout';
import { AUTO_FOLD_COMMANDS, describeGroup, foldGraph, foldGroups, isFolded, stepRange, toggleAll, toggleGroup, type FoldBy, type FoldGroup, type FoldState } from './collapse';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const NODE_W = COLUMN_WIDTH - 40;
const NODE_H = 20;
const vscode = acquireVsCodeApi();
const ipc = new Endpoint((m) => vscode.postMessage(m));
window.addEventListener('message', (e) => void ipc.receive(e.data));

const saved = vscode.getState() as Partial<TraceGraphState> | undefined;
const state: TraceGraphState = { showFileEdges: true, showStdoutEdges: true, ...saved };
// Lets tests tell a webview that was rebuilt from saved state from one that stayed alive.
document.body.dataset.restored = saved ? 'true' : 'false';
const saveState = (): void => vscode.setState(state);

let current: GraphPayload | undefined;
let currentStep: number | undefined;
/** Where each drawn node is (layout coordinates): a fold keeps the node the user clicked where it was. */
let positions = new Map<string, Position>();
let groups: FoldGroup[] = [];
/** Steps shown by each folded summary node, so the debugger's step lights up the summary that hides it. */
let summarySteps = new Map<string, Set<number>>();
/** The node under the mouse, so a redraw of a live run keeps its hover. */
let hovered: { id: string; text: () => string } | undefined;
/** The status the graph itself calls for; a failed click shows its reason instead, until the next draw. */
let baseStatus = '';

// ---- static chrome (created once, text only) ----
const toolbar = document.createElement('div');
toolbar.className = 'toolbar';
const title = document.createElement('span');
title.className = 'title';
const stats = document.createElement('span');
stats.className = 'stats';
stats.id = 'stats';
const foldBy = document.createElement('select');
foldBy.id = 'fold-by';
foldBy.title = 'Which runs of consecutive commands fold into one node';
for (const [value, label] of [['independent', 'fold: independent runs'], ['off-path', 'fold: runs off E paths']] as const) {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = label;
  foldBy.append(o);
}
foldBy.addEventListener('change', () => {
  state.foldBy = foldBy.value as FoldBy;
  // Choosing how to fold means folding that way.
  state.collapseAll = true;
  state.foldExceptions = [];
  saveState();
  draw();
});
const collapseAll = document.createElement('button');
collapseAll.id = 'collapse-all';
collapseAll.type = 'button';
collapseAll.addEventListener('click', () => {
  Object.assign(state, toFoldFields(toggleAll(foldState(), groups)));
  saveState();
  draw();
});
toolbar.append(title, checkbox('file-edges', 'file edges', 'showFileEdges'), checkbox('stdout-edges', 'stdout edges', 'showStdoutEdges'), foldBy, collapseAll, stats);
const tooltip = document.createElement('pre');
tooltip.className = 'tooltip';
tooltip.id = 'tooltip';
const status = document.createElement('div');
status.className = 'status';
status.id = 'status';
document.body.append(toolbar, status, tooltip);

const svg = select(document.body).append('svg').attr('id', 'graph').attr('class', 'graph');
const root = svg.append('g').attr('class', 'root');
/**
 * The drawing area's size, measured while it is empty (each draw) and on resize. d3-zoom's default
 * extent reads the SVG's size on every transform, which, with thousands of nodes just drawn,
 * forces a full synchronous layout.
 */
let viewport = { width: 0, height: 0 };
const measureViewport = (): void => {
  const box = (svg.node() as SVGSVGElement).getBoundingClientRect();
  viewport = { width: box.width, height: box.height };
};
window.addEventListener('resize', measureViewport);
const zoomer = zoom<SVGSVGElement, unknown>()
  .scaleExtent([0.02, 4])
  .extent(() => [[0, 0], [viewport.width, viewport.height]])
  .on('zoom', (event: { transform: ZoomTransform; sourceEvent: unknown }) => {
    root.attr('transform', event.transform.toString());
    // Only the user's own zoom and pan is kept: until there is one, each redraw of a growing graph fits it anew.
    if (event.sourceEvent) saveTransform(event.transform);
  });
svg.call(zoomer).on('dblclick.zoom', null);

function saveTransform(t: ZoomTransform): void {
  state.transform = { x: t.x, y: t.y, k: t.k };
  saveState();
}

function checkbox(id: string, label: string, key: 'showFileEdges' | 'showStdoutEdges'): HTMLLabelElement {
  const wrap = document.createElement('label');
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.id = id;
  box.checked = state[key];
  box.addEventListener('change', () => {
    state[key] = box.checked;
    saveState();
    applyEdgeVisibility();
  });
  wrap.append(box, document.createTextNode(` ${label}`));
  return wrap;
}

/** E is known once the run ended with a verifier trace; hosts that send no run info only send finished runs. */
function eKnown(): boolean {
  return current?.run ? current.run.eKnown : true;
}

function foldState(): FoldState {
  const by = state.foldBy === 'off-path' && eKnown() ? 'off-path' : 'independent';
  return { foldBy: by, collapseAll: state.collapseAll ?? false, exceptions: state.foldExceptions ?? [] };
}

function toFoldFields(f: FoldState): Pick<TraceGraphState, 'collapseAll' | 'foldExceptions'> {
  return { collapseAll: f.collapseAll, foldExceptions: f.exceptions };
}

function applyEdgeVisibility(): void {
  root.selectAll<SVGPathElement, unknown>('path.edge.file').style('display', state.showFileEdges ? '' : 'none');
  root.selectAll<SVGPathElement, unknown>('path.edge.stdout').style('display', state.showStdoutEdges ? '' : 'none');
}

function curve(x1: number, y1: number, x2: number, y2: number): string {
  const mx = (x1 + x2) / 2;
  return `M${x1},${y1}C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
}

function render(payload: GraphPayload): void {
  current = payload;
  if (payload.currentStep !== undefined) currentStep = payload.currentStep;
  // A big graph starts folded the first time it is seen; after that the user's choice stands.
  if (state.collapseAll === undefined && payload.graph.nodes.length > 0) {
    state.collapseAll = payload.graph.nodes.length > AUTO_FOLD_COMMANDS;
    saveState();
  }
  draw();
}

/** Lays out and draws the current graph as folded now; `anchor` keeps one node still on screen (the one clicked). */
function draw(anchor?: { from: string; to: string }): void {
  if (!current) return;
  const t0 = performance.now();
  const g: GraphView = current.graph;
  const run = current.run;
  title.textContent = `${g.taskId ?? ''} ${g.runId ?? ''}`.trim();
  baseStatus = statusText(g, run);
  setStatus(baseStatus, false);
  document.body.dataset.live = run?.live ? 'true' : 'false';

  const fold = foldState();
  foldBy.value = fold.foldBy;
  const offPath = foldBy.querySelector<HTMLOptionElement>('option[value="off-path"]')!;
  offPath.disabled = !eKnown();
  offPath.textContent = eKnown() ? 'fold: runs off E paths' : 'fold: runs off E paths (no E yet)';
  groups = foldGroups(g, fold.foldBy, { keepTail: run?.live ? 1 : 0 });
  const folded = foldGraph(g, groups, (id) => isFolded(fold, id));
  const anyFolded = folded.folded > 0;
  collapseAll.textContent = anyFolded ? 'Expand all' : 'Collapse all';
  collapseAll.disabled = groups.length === 0;
  collapseAll.title = groups.length === 0
    ? `Nothing to fold: no run of 3 or more consecutive ${fold.foldBy === 'independent' ? 'independent commands' : 'commands off the paths into E'}`
    : `${groups.length} run(s) of ${fold.foldBy === 'independent' ? 'independent commands' : 'commands off the paths into E'} can fold into one node each`;

  const before = anchor ? positions.get(anchor.from) : undefined;
  const layout = layoutGraph(folded);
  const pos = layout.positions;
  positions = pos;
  const onPath = pathEdgeKeys(g.paths);
  const factors = g.nodes.map((n) => n.factor);
  const lo = Math.min(...factors, 1);
  const hi = Math.max(...factors, 1);
  const colour = scaleSequential(interpolateRdYlGn).domain([lo, hi === lo ? lo + 1 : hi]);
  root.selectAll('*').remove();
  // Measured while the drawing is empty: asked after the thousands of nodes are in, it forces a
  // synchronous layout of all of them (a third of the draw time at 2,000 commands).
  measureViewport();

  const edges = root.append('g').attr('class', 'edges');
  for (const e of folded.edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const p = edges.append('path')
      .attr('class', `edge ${e.kind}${onPath.has(`${e.source}>${e.target}`) ? ' on-path' : ''}${e.count > 1 ? ' bundle' : ''}`)
      .attr('data-source', e.source)
      .attr('data-target', e.target)
      .attr('d', curve(a.x + NODE_W, a.y + NODE_H / 2, b.x, b.y + NODE_H / 2));
    p.append('title').text(`${e.kind}: ${e.labels.join(', ')}${e.labelCount > e.labels.length ? ` (+${e.labelCount - e.labels.length})` : ''}${e.count > 1 ? ` · ${e.count} edges` : ''}`);
  }
  for (const e of folded.sinkEdges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    edges.append('path').attr('class', `edge sink-edge${onPath.has(`${e.source}>${e.target}`) ? ' on-path' : ''}`).attr('data-source', e.source).attr('data-target', e.target).attr('d', curve(a.x + NODE_W, a.y + NODE_H / 2, b.x, b.y + NODE_H / 2));
  }

  const nodes = root.append('g').attr('class', 'nodes');
  summarySteps = new Map();
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const groupById = new Map(groups.map((grp) => [grp.id, grp]));
  for (const item of folded.nodes) {
    const p = pos.get(item.id)!;
    if (item.kind === 'summary') {
      const grp = item.group;
      summarySteps.set(grp.id, new Set(grp.members.map((m) => byId.get(m)!.step)));
      const node = nodes.append('g')
        .attr('class', `node summary ${grp.by}`)
        .attr('data-id', grp.id)
        .attr('data-members', String(grp.members.length))
        .attr('transform', `translate(${p.x},${p.y})`);
      // A stack of cards: more than one command is in here.
      node.append('rect').attr('class', 'behind').attr('x', 4).attr('y', -4).attr('width', NODE_W).attr('height', NODE_H).attr('rx', 4);
      node.append('rect').attr('class', 'front').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 4).style('fill', colour(grp.factor.mean));
      node.append('text').attr('x', 6).attr('y', 14).text(`▸ ${stepRange(grp)} (${grp.members.length})`);
      const text = (): string => describeGroup(grp);
      hoverable(node, grp.id, text);
      node.on('click', (ev: MouseEvent) => {
        ev.stopPropagation();
        setFold(toggleGroup(foldState(), grp.id), { from: grp.id, to: grp.members[0] });
      });
      continue;
    }
    const n = item.node;
    const groupId = folded.groupOf.get(n.id);
    const grp = groupId ? groupById.get(groupId) : undefined;
    const node = nodes.append('g')
      .attr('class', `node command${n.onPathToE ? ' on-path' : ''}${grp ? ' in-group' : ''}`)
      .attr('data-id', n.id)
      .attr('data-step', String(n.step))
      .attr('transform', `translate(${p.x},${p.y})`);
    if (grp) node.attr('data-group', grp.id);
    node.append('rect').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 4).style('fill', colour(n.factor));
    node.append('text').attr('x', 6).attr('y', 14).text(`${n.step}: ${n.command.split('\n')[0].slice(0, grp ? 21 : 24)}`);
    const text = (): string => describe(n) + (grp ? `\n\nfolds with ${stepRange(grp)} (${grp.members.length} commands): alt-click or ⊟ to fold them into one node` : '');
    hoverable(node, n.id, text);
    node.on('click', (ev: MouseEvent) => {
      if (grp && ev.altKey) return setFold(toggleGroup(foldState(), grp.id), { from: n.id, to: grp.id });
      void selectStep(n.step, n.id);
    });
    if (grp) {
      const handle = node.append('g').attr('class', 'fold-handle').attr('data-group', grp.id).attr('transform', `translate(${NODE_W - 16},2)`);
      handle.append('rect').attr('width', 14).attr('height', NODE_H - 4).attr('rx', 3);
      handle.append('text').attr('x', 2).attr('y', 12).text('⊟');
      handle.on('click', (ev: MouseEvent) => {
        ev.stopPropagation();
        setFold(toggleGroup(foldState(), grp.id), { from: n.id, to: grp.id });
      });
    }
  }
  for (const s of g.sinks) {
    const p = pos.get(s.id)!;
    const node = nodes.append('g').attr('class', `node sink ${s.kind}`).attr('data-id', s.id).attr('transform', `translate(${p.x},${p.y})`);
    node.append('rect').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 10);
    node.append('text').attr('x', 8).attr('y', 14).text(`E ${s.kind}: ${s.name.slice(-22)}`);
    hoverable(node, s.id, () => `E (${s.kind}): ${s.name}\nchecked by the verifier`);
  }
  const foldStats = folded.folded > 0 ? ` · ${folded.folded} folded (${folded.hiddenCommands} commands)` : '';
  const runtime = (g.runtimeResources?.files.length ?? 0) + (g.runtimeResources?.processes.length ?? 0);
  stats.textContent = `${g.nodes.length} commands · ${g.edges.length} edges · ${g.sinks.length} in E${runtime ? ` (+${runtime} runtime, not drawn)` : ''} · ${g.paths.length} on paths into E${g.onPathFraction !== null ? ` (${(g.onPathFraction * 100).toFixed(0)}%)` : ''}${foldStats}`;
  applyEdgeVisibility();
  highlightStep(currentStep);
  restoreHover();
  placeView(layout, viewport, before && anchor ? { before, after: pos.get(anchor.to) } : undefined);
  document.body.dataset.folded = String(folded.folded);
  document.body.dataset.renderMs = (performance.now() - t0).toFixed(1);
  document.body.dataset.ready = 'true';
}

function setFold(next: FoldState, anchor: { from: string; to: string }): void {
  Object.assign(state, toFoldFields(next));
  saveState();
  hideTooltip();
  draw(anchor);
}

/** The user's zoom and pan if there is one (moved so a clicked node stays put), else the whole graph fitted. */
function placeView(layout: { width: number; height: number }, box: { width: number; height: number }, anchor?: { before: Position; after?: Position }): void {
  if (anchor?.after) {
    const t = zoomTransform(svg.node() as SVGSVGElement).translate(anchor.before.x - anchor.after.x, anchor.before.y - anchor.after.y);
    svg.call(zoomer.transform, t);
    saveTransform(t);
    return;
  }
  const initial = state.transform
    ? zoomIdentity.translate(state.transform.x, state.transform.y).scale(state.transform.k)
    : zoomIdentity.translate(20, 20).scale(Math.min(1, Math.max(0.05, Math.min((box.width - 40) / Math.max(layout.width, 1), (box.height - 40) / Math.max(layout.height, 1)))));
  svg.call(zoomer.transform, initial);
}

function statusText(g: GraphView, run: GraphPayload['run']): string {
  if (run?.waiting) return run.waiting;
  if (run?.live) {
    const so = `Live run: ${run.steps} step(s) so far, ${g.nodes.length} command(s); the graph grows as steps are written.`;
    return `${so} No E yet: the verifier's resource set is known when the run ends and its tests have run, so no path into E is drawn.`;
  }
  if (g.nodes.length === 0) return 'This run has no traced commands: nothing to draw. Run with tracing on (tbrl run <task>) to see dependencies.';
  if (run && !run.ended) return `This run has no footer (still running elsewhere, or killed): no E, so no path into E is drawn.${g.fallback ? ` DepGPO fallback: ${g.fallback}` : ''}`;
  return g.fallback ? `DepGPO fallback: ${g.fallback}` : '';
}

function describe(n: GraphView['nodes'][number]): string {
  const lines = [`step ${n.step} · factor ${n.factor.toFixed(2)} · score ${n.stepScore.toFixed(2)}${n.onPathToE ? ' · on a path into E' : ''}`, n.command];
  if (n.reads.length) lines.push(`reads: ${n.reads.slice(0, 8).join(', ')}${n.reads.length > 8 ? ` (+${n.reads.length - 8})` : ''}`);
  if (n.writes.length) lines.push(`writes: ${n.writes.slice(0, 8).map((w) => `${w.path} (${w.lines} lines)`).join(', ')}`);
  if (n.stdoutValues.length) lines.push(`stdout values: ${n.stdoutValues.slice(0, 5).join(', ')}`);
  if (n.ports.length) lines.push(`ports: ${n.ports.join(', ')}`);
  if (n.incomplete) lines.push(`trace incomplete: ${n.incomplete}`);
  return lines.join('\n');
}

function hoverable(node: Selection<SVGGElement, unknown, null, undefined>, id: string, text: () => string): void {
  node.on('mouseenter', (ev: MouseEvent) => {
    hovered = { id, text };
    showTooltip(ev, text());
  })
    .on('mousemove', (ev: MouseEvent) => moveTooltip(ev))
    .on('mouseleave', () => {
      hovered = undefined;
      hideTooltip();
    });
}

/** After a redraw the pointer is still over the same node: keep its tooltip, with the new text. */
function restoreHover(): void {
  if (!hovered) return;
  const still = root.select(`g.node[data-id="${CSS.escape(hovered.id)}"]`);
  if (still.empty()) {
    hovered = undefined;
    hideTooltip();
  } else tooltip.textContent = hovered.text();
}

function showTooltip(ev: MouseEvent, text: string): void {
  tooltip.textContent = text;
  tooltip.style.display = 'block';
  moveTooltip(ev);
}
function moveTooltip(ev: MouseEvent): void {
  tooltip.style.left = `${ev.clientX + 12}px`;
  tooltip.style.top = `${ev.clientY + 12}px`;
}
function hideTooltip(): void {
  tooltip.style.display = 'none';
}

function highlightStep(step: number | undefined): void {
  currentStep = step;
  root.selectAll<SVGGElement, unknown>('g.node.command').classed('current', function () {
    return step !== undefined && this.dataset.step === String(step);
  });
  root.selectAll<SVGGElement, unknown>('g.node.summary').classed('current', function () {
    return step !== undefined && summarySteps.get(this.dataset.id ?? '')?.has(step) === true;
  });
}

async function selectStep(step: number, id: string): Promise<void> {
  state.selected = id;
  saveState();
  highlightStep(step);
  try {
    const r = await ipc.sendRequest(SelectStep, { step });
    if (r.selected) setStatus(baseStatus, false);
    else setStatus(r.reason ?? '', true);
  } catch (err) {
    setStatus((err as Error).message, true);
  }
}

function setStatus(text: string, error: boolean): void {
  status.textContent = text;
  status.classList.toggle('error', error);
}

ipc.onNotification(StepChanged, ({ step }) => highlightStep(step));
ipc.onNotification(GraphChanged, (payload) => render(payload));

ipc.sendRequest(GetGraph, undefined).then(render, (err: Error) => {
  setStatus(`Could not load the graph: ${err.message}`, true);
});

// For tests and benchmarks: the graph that is on screen.
(window as unknown as { tbrlTraceGraph: () => GraphPayload | undefined }).tbrlTraceGraph = () => current;
