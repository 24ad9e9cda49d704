import { select } from 'd3-selection';
import { scaleLinear, scaleSequential } from 'd3-scale';
import { interpolateRdBu } from 'd3-scale-chromatic';
import { line } from 'd3-shape';
import { axisBottom, axisLeft } from 'd3-axis';
import { Endpoint } from '../shared/ipc';
import { DecideGate } from './decide-gate';
import { Decide, Decided, GetStep, SelectStep, StepShown, type InspectorPayload, type StepInspectorState, type StepView, type TurnChoice } from './protocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

// Trajectory text (candidates, test names, judge components) reaches the DOM only through
// textContent / d3 .text(): a turn full of HTML stays a turn full of HTML characters.
const vscode = acquireVsCodeApi();
const ipc = new Endpoint((m) => vscode.postMessage(m));
window.addEventListener('message', (e) => void ipc.receive(e.data));

const saved = vscode.getState() as Partial<StepInspectorState> | undefined;
const state: StepInspectorState = { expanded: false, ...saved };
document.body.dataset.restored = saved ? 'true' : 'false';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
const fmt = (v: number | undefined, digits = 3): string => (v === undefined ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(digits));

const header = el('div', 'toolbar');
const title = el('span', 'title');
const meta = el('span', 'meta');
const expand = el('label');
const expandBox = el('input');
expandBox.type = 'checkbox';
expandBox.id = 'expand';
expandBox.checked = state.expanded;
expandBox.addEventListener('change', () => {
  state.expanded = expandBox.checked;
  vscode.setState(state);
  document.body.classList.toggle('expanded', state.expanded);
});
expand.append(expandBox, document.createTextNode(' full text'));
header.append(title, meta, expand);
const status = el('div', 'status');
status.id = 'status';
const candidates = section('candidates', 'Candidates');
// Shown only while the inspected step is a turn waiting to run: the choices that are not a card.
const decideBar = el('div', 'decide-bar');
decideBar.id = 'decide';
candidates.insertBefore(decideBar, candidates.querySelector('.content'));
const matrix = section('matrix', 'Pairwise matrix (row preferred over column)');
const reward = section('reward', 'Reward');
const phi = section('phi', 'Φ (progress potential)');
document.body.append(header, status, candidates, matrix, reward, phi);
document.body.classList.toggle('expanded', state.expanded);

function section(id: string, heading: string): HTMLElement {
  const s = el('section');
  s.id = id;
  s.append(el('h3', undefined, heading), el('div', 'content'));
  return s;
}
function content(s: HTMLElement): HTMLElement {
  const c = s.querySelector<HTMLElement>('.content') as HTMLElement;
  c.replaceChildren();
  return c;
}

/** The outcome of the last decision stays in the status line across the stops of that run that follow it. */
let lastDecision: { runId: string; message: string } | undefined;
const gate = new DecideGate();
let shown: StepView | undefined;

function setStatus(text: string, ok = false): void {
  status.textContent = text;
  status.classList.toggle('ok', ok);
}

function render(p: InspectorPayload): void {
  const v = p.view;
  shown = v;
  document.body.dataset.step = String(v.step);
  document.body.dataset.pending = v.pending ? 'true' : 'false';
  title.textContent = v.pending ? `Step ${v.step} · waiting to run` : `Step ${v.step} of ${v.steps}`;
  const d = v.decision;
  meta.textContent = [v.runId, d ? `verifier ${d.mode}, margin ${fmt(d.margin)}, ${d.calls} call(s), ${d.outputTokens} tokens` : 'no verifier decision',
    d?.fallback ? `fallback: ${d.fallback}` : '', d?.degradedFrom ? `degraded from ${d.degradedFrom}` : '', v.human ?? ''].filter(Boolean).join(' · ');
  const decided = lastDecision?.runId === v.runId ? lastDecision.message : undefined;
  setStatus(decided ?? '', decided !== undefined);
  renderDecideBar(v);
  renderCandidates(v);
  setDecideEnabled(gate.rendered(v));
  renderMatrix(v);
  renderReward(v);
  renderPhi(v);
  document.body.dataset.ready = 'true';
}

function renderCandidates(v: StepView): void {
  const c = content(candidates);
  if (v.candidates.length === 0) c.append(el('p', 'empty', 'This step recorded no candidates.'));
  for (const cand of v.candidates) {
    const card = el('div', `candidate${cand.chosen ? ' chosen' : ''}${cand.executed ? ' executed' : ''}${cand.parses ? '' : ' unparsed'}`);
    card.dataset.index = String(cand.index);
    const head = el('div', 'head');
    head.append(el('span', 'name', `#${cand.index}`), el('span', 'score', `score ${fmt(cand.score)}`), el('span', 'rank', cand.rank ? `rank ${cand.rank}` : ''));
    // Without a verifier (n = 1) a waiting turn's chosen card is just the policy's proposal.
    const pickTag = v.decision ? 'verifier pick' : 'proposed';
    const tags = [cand.chosen ? pickTag : '', cand.executed ? 'executed' : '', cand.parses ? '' : 'does not parse', cand.tokens !== undefined ? `${cand.tokens} tok` : ''].filter(Boolean);
    for (const t of tags) head.append(el('span', `tag${t === pickTag ? ' pick' : ''}`, t));
    card.append(head, el('pre', 'text', cand.text));
    if (v.pending) {
      const accept = cand.index === v.pending.chosen;
      card.append(decideButton(accept ? (v.decision ? 'Accept verifier\'s pick' : 'Run this (proposed)') : 'Run this', accept ? { action: 'accept' } : { action: 'pick', candidate: cand.index }, 'run'));
    }
    c.append(card);
  }
}

function renderDecideBar(v: StepView): void {
  decideBar.replaceChildren();
  decideBar.hidden = !v.pending;
  if (!v.pending) return;
  decideBar.append(el('span', 'prompt', 'Not run yet: choose what runs.'), decideButton('Edit…', { action: 'edit' }, 'edit'), decideButton('Stop run', { action: 'stop' }, 'stop'));
}

function decideButton(label: string, choice: TurnChoice, cls: string): HTMLButtonElement {
  const b = el('button', `decide ${cls}`, label);
  b.type = 'button';
  b.dataset.action = choice.action;
  if (choice.action === 'pick') b.dataset.candidate = String(choice.candidate);
  b.addEventListener('click', () => void decide(choice));
  return b;
}

function setDecideEnabled(enabled: boolean): void {
  document.querySelectorAll<HTMLButtonElement>('button.decide').forEach((b) => { b.disabled = !enabled; });
}

async function decide(choice: TurnChoice): Promise<void> {
  const v = shown;
  if (!v?.pending) return;
  // One decision per turn (decide-gate.ts): every button goes grey until the adapter refused.
  setDecideEnabled(false);
  gate.sending(v);
  setStatus(choice.action === 'edit' ? `Step ${v.step}: edit the turn in the input box…` : `Step ${v.step}: sending…`, true);
  try {
    // No timeout: an edit waits for the user in the input box.
    const r = await ipc.sendRequest(Decide, { step: v.step, choice }, 0);
    if (r.sent) lastDecision = { runId: v.runId, message: r.message };
    setStatus(r.message, r.sent);
    if (!r.sent && gate.refused(v, shown)) setDecideEnabled(true);
  } catch (err) {
    setStatus(`The decision was not sent: ${(err as Error).message}`);
    if (gate.refused(v, shown)) setDecideEnabled(true);
  }
}

function renderMatrix(v: StepView): void {
  const c = content(matrix);
  matrix.hidden = !v.matrix;
  const m = v.matrix;
  if (!m) return;
  const cell = 36;
  const pad = 28;
  const color = scaleSequential(interpolateRdBu).domain([-(m.max || 1), m.max || 1]);
  const svg = select(c).append('svg').attr('class', 'heatmap').attr('width', pad + m.size * cell + 4).attr('height', pad + m.size * cell + 4);
  const idx = [...Array(m.size).keys()];
  svg.selectAll('text.col').data(idx).join('text').attr('class', 'col').attr('x', (i) => pad + i * cell + cell / 2).attr('y', pad - 8).text((i) => `#${i}`);
  svg.selectAll('text.row').data(idx).join('text').attr('class', 'row').attr('x', pad - 4).attr('y', (i) => pad + i * cell + cell / 2 + 4).text((i) => `#${i}`);
  const g = svg.selectAll('g.cell').data(m.cells).join('g').attr('class', 'cell').attr('transform', (d) => `translate(${pad + d.col * cell},${pad + d.row * cell})`);
  g.append('rect').attr('width', cell - 2).attr('height', cell - 2).attr('fill', (d) => color(d.value));
  g.append('text').attr('x', cell / 2).attr('y', cell / 2 + 4).text((d) => d.value.toFixed(2));
  g.append('title').text((d) => `#${d.row} over #${d.col}: ${d.value}`);
}

function renderReward(v: StepView): void {
  const c = content(reward);
  if (v.reward.missing) c.append(el('p', 'empty', v.reward.missing));
  if (v.reward.rows.length === 0) return;
  const table = el('table');
  const head = el('tr');
  for (const h of ['', '', 'name', 'value', 'weight', 'share', '']) head.append(el('th', undefined, h));
  table.append(head);
  for (const r of v.reward.rows) {
    const tr = el('tr', `row ${r.group}${r.value === 0 && r.group === 'tests' ? ' failed' : ''}`);
    tr.dataset.group = r.group;
    const bar = el('td', 'bar');
    const fill = el('div', 'fill');
    // Width through the CSSOM, not a style attribute, which the CSP would refuse.
    fill.style.width = `${Math.round(100 * Math.max(0, Math.min(1, r.value ?? 0)))}%`;
    // A fixed-size track: an empty cell would be squeezed to nothing by the table layout.
    const track = el('div', 'track');
    track.append(fill);
    bar.append(track);
    tr.append(el('td', 'group', r.group), bar, el('td', 'name', r.name), el('td', 'value', fmt(r.value)), el('td', 'weight', fmt(r.weight)), el('td', 'share', r.share === undefined ? '' : `${Math.round(r.share * 100)}%`));
    tr.append(el('td', 'detail', r.detail));
    table.append(tr);
  }
  c.append(table);
}

function renderPhi(v: StepView): void {
  const c = content(phi);
  const pts = v.phi.points;
  if (pts.length === 0) {
    c.append(el('p', 'empty', 'No Φ recorded: this task has no progress potential (only Tev tasks do).'));
    return;
  }
  const w = Math.max(320, Math.min(900, c.clientWidth || 600));
  const h = 160;
  const m = { l: 34, r: 10, t: 8, b: 22 };
  const x = scaleLinear().domain([Math.min(...pts.map((p) => p.step)), Math.max(1, ...pts.map((p) => p.step))]).range([m.l, w - m.r]);
  const y = scaleLinear().domain([Math.min(0, ...pts.map((p) => p.phi)), Math.max(1, ...pts.map((p) => p.phi))]).range([h - m.b, m.t]);
  const svg = select(c).append('svg').attr('class', 'phi-curve').attr('width', w).attr('height', h);
  // Steps are integers: label the recorded steps themselves when there are few, never 0.5.
  const xAxis = pts.length <= 12 ? axisBottom(x).tickValues(pts.map((p) => p.step)).tickFormat((n) => String(n)) : axisBottom(x).ticks(10).tickFormat((n) => (Number.isInteger(n.valueOf()) ? String(n) : ''));
  svg.append('g').attr('transform', `translate(0,${h - m.b})`).call(xAxis);
  svg.append('g').attr('transform', `translate(${m.l},0)`).call(axisLeft(y).ticks(4));
  svg.append('path').datum(pts).attr('class', 'line').attr('d', line<{ step: number; phi: number }>().x((p) => x(p.step)).y((p) => y(p.phi)));
  const dots = svg.selectAll('circle.point').data(pts).join('circle')
    .attr('class', (p, i) => `point${p.step === v.phi.current ? ' current' : ''}${i > 0 && p.phi < pts[i - 1].phi ? ' drop' : ''}`)
    .attr('cx', (p) => x(p.step)).attr('cy', (p) => y(p.phi)).attr('r', (p) => (p.step === v.phi.current ? 6 : 3.5));
  dots.append('title').text((p) => `step ${p.step}: Φ = ${p.phi}`);
  dots.on('click', (_e: MouseEvent, p) => {
    ipc.sendRequest(SelectStep, { step: p.step }).then((r) => { status.textContent = r.selected ? '' : r.reason ?? ''; }, (err: Error) => { status.textContent = err.message; });
  });
}

ipc.onNotification(StepShown, render);
ipc.onNotification(Decided, ({ step, message }) => {
  if (shown) lastDecision = { runId: shown.runId, message };
  // The next stop may already be shown (its buttons stay): the message still says what was decided.
  setStatus(message, true);
  if (gate.decidedElsewhere(step, shown)) setDecideEnabled(false);
});
ipc.sendRequest(GetStep, undefined).then((r) => {
  if ('empty' in r) status.textContent = r.empty;
  else render(r);
}, (err: Error) => { status.textContent = `Could not load the step: ${err.message}`; });
