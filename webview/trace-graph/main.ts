import { select } from 'd3-selection';
import { zoom, zoomIdentity, type ZoomTransform } from 'd3-zoom';
import { scaleSequential } from 'd3-scale';
import { interpolateRdYlGn } from 'd3-scale-chromatic';
import { Endpoint } from '../shared/ipc';
import { GetGraph, GraphChanged, SelectStep, StepChanged, type GraphPayload, type GraphView, type TraceGraphState } from './protocol';
import { layoutGraph, pathEdgeKeys, COLUMN_WIDTH } from './layout';

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

// ---- static chrome (created once, text only) ----
const toolbar = document.createElement('div');
toolbar.className = 'toolbar';
const title = document.createElement('span');
title.className = 'title';
const stats = document.createElement('span');
stats.className = 'stats';
stats.id = 'stats';
toolbar.append(title, checkbox('file-edges', 'file edges', 'showFileEdges'), checkbox('stdout-edges', 'stdout edges', 'showStdoutEdges'), stats);
const tooltip = document.createElement('pre');
tooltip.className = 'tooltip';
tooltip.id = 'tooltip';
const status = document.createElement('div');
status.className = 'status';
document.body.append(toolbar, status, tooltip);

const svg = select(document.body).append('svg').attr('id', 'graph').attr('class', 'graph');
const root = svg.append('g').attr('class', 'root');
const zoomer = zoom<SVGSVGElement, unknown>()
  .scaleExtent([0.02, 4])
  .on('zoom', (event: { transform: ZoomTransform }) => {
    root.attr('transform', event.transform.toString());
    state.transform = { x: event.transform.x, y: event.transform.y, k: event.transform.k };
    saveState();
  });
svg.call(zoomer).on('dblclick.zoom', null);

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

function applyEdgeVisibility(): void {
  root.selectAll<SVGPathElement, unknown>('path.edge.file').style('display', state.showFileEdges ? '' : 'none');
  root.selectAll<SVGPathElement, unknown>('path.edge.stdout').style('display', state.showStdoutEdges ? '' : 'none');
}

function curve(x1: number, y1: number, x2: number, y2: number): string {
  const mx = (x1 + x2) / 2;
  return `M${x1},${y1}C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
}

function render(payload: GraphPayload): void {
  const t0 = performance.now();
  current = payload;
  const g: GraphView = payload.graph;
  title.textContent = `${g.taskId ?? ''} ${g.runId ?? ''}`.trim();
  status.textContent = g.nodes.length === 0 ? 'This run has no traced commands: nothing to draw. Run with tracing on (tbrl run <task>) to see dependencies.' : g.fallback ? `DepGPO fallback: ${g.fallback}` : '';
  const layout = layoutGraph(g);
  const pos = layout.positions;
  const onPath = pathEdgeKeys(g.paths);
  const factors = g.nodes.map((n) => n.factor);
  const lo = Math.min(...factors, 1);
  const hi = Math.max(...factors, 1);
  const colour = scaleSequential(interpolateRdYlGn).domain([lo, hi === lo ? lo + 1 : hi]);
  root.selectAll('*').remove();

  const edges = root.append('g').attr('class', 'edges');
  for (const e of g.edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const p = edges.append('path')
      .attr('class', `edge ${e.kind}${onPath.has(`${e.source}>${e.target}`) ? ' on-path' : ''}`)
      .attr('d', curve(a.x + NODE_W, a.y + NODE_H / 2, b.x, b.y + NODE_H / 2));
    p.append('title').text(`${e.kind}: ${e.labels.join(', ')}${e.labelCount > e.labels.length ? ` (+${e.labelCount - e.labels.length})` : ''}`);
  }
  for (const e of g.sinkEdges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    edges.append('path').attr('class', `edge sink-edge${onPath.has(`${e.source}>${e.target}`) ? ' on-path' : ''}`).attr('d', curve(a.x + NODE_W, a.y + NODE_H / 2, b.x, b.y + NODE_H / 2));
  }

  const nodes = root.append('g').attr('class', 'nodes');
  g.nodes.forEach((n) => {
    const p = pos.get(n.id)!;
    const node = nodes.append('g')
      .attr('class', `node command${n.onPathToE ? ' on-path' : ''}`)
      .attr('data-id', n.id)
      .attr('data-step', String(n.step))
      .attr('transform', `translate(${p.x},${p.y})`);
    node.append('rect').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 4).style('fill', colour(n.factor));
    node.append('text').attr('x', 6).attr('y', 14).text(`${n.step}: ${n.command.split('\n')[0].slice(0, 24)}`);
    node.on('mouseenter', (ev: MouseEvent) => showTooltip(ev, describe(n)))
      .on('mousemove', (ev: MouseEvent) => moveTooltip(ev))
      .on('mouseleave', hideTooltip)
      .on('click', () => void selectStep(n.step, n.id));
  });
  for (const s of g.sinks) {
    const p = pos.get(s.id)!;
    const node = nodes.append('g').attr('class', `node sink ${s.kind}`).attr('data-id', s.id).attr('transform', `translate(${p.x},${p.y})`);
    node.append('rect').attr('width', NODE_W).attr('height', NODE_H).attr('rx', 10);
    node.append('text').attr('x', 8).attr('y', 14).text(`E ${s.kind}: ${s.name.slice(-22)}`);
    node.on('mouseenter', (ev: MouseEvent) => showTooltip(ev, `E (${s.kind}): ${s.name}\nchecked by the verifier`)).on('mousemove', moveTooltip).on('mouseleave', hideTooltip);
  }
  stats.textContent = `${g.nodes.length} commands · ${g.edges.length} edges · ${g.sinks.length} in E · ${g.paths.length} on paths into E${g.onPathFraction !== null ? ` (${(g.onPathFraction * 100).toFixed(0)}%)` : ''}`;
  applyEdgeVisibility();
  highlightStep(payload.currentStep ?? currentStep);
  const box = (svg.node() as SVGSVGElement).getBoundingClientRect();
  const initial = state.transform
    ? zoomIdentity.translate(state.transform.x, state.transform.y).scale(state.transform.k)
    : zoomIdentity.translate(20, 20).scale(Math.min(1, Math.max(0.05, Math.min((box.width - 40) / Math.max(layout.width, 1), (box.height - 40) / Math.max(layout.height, 1)))));
  svg.call(zoomer.transform, initial);
  document.body.dataset.renderMs = (performance.now() - t0).toFixed(1);
  document.body.dataset.ready = 'true';
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
}

async function selectStep(step: number, id: string): Promise<void> {
  state.selected = id;
  saveState();
  highlightStep(step);
  try {
    const r = await ipc.sendRequest(SelectStep, { step });
    status.textContent = r.selected ? '' : r.reason ?? '';
  } catch (err) {
    status.textContent = (err as Error).message;
  }
}

ipc.onNotification(StepChanged, ({ step }) => highlightStep(step));
ipc.onNotification(GraphChanged, (payload) => render(payload));

ipc.sendRequest(GetGraph, undefined).then(render, (err: Error) => {
  status.textContent = `Could not load the graph: ${err.message}`;
});

// For tests and benchmarks: the graph that is on screen.
(window as unknown as { tbrlTraceGraph: () => GraphPayload | undefined }).tbrlTraceGraph = () => current;
