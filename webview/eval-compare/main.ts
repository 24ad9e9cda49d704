import { Endpoint } from '../shared/ipc';
import { differenceLine, filterRows, pct, signedPoints, sortRows } from './matrix';
import { ComparisonChanged, GetComparison, OpenTrial, type MatrixView, type SortBy } from './protocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface ViewState {
  sort: SortBy;
  descending: boolean;
  filter: string;
}

const vscode = acquireVsCodeApi();
const ipc = new Endpoint((m) => vscode.postMessage(m));
window.addEventListener('message', (e) => void ipc.receive(e.data));

const state: ViewState = { sort: { by: 'name' }, descending: false, filter: '', ...((vscode.getState() as Partial<ViewState> | undefined) ?? {}) };
let view: MatrixView = { jobs: [], rows: [], differences: [] };

// Task names and job labels come from job directories on disk: text only, never markup.
const header = el('div', 'header');
const title = el('span', 'title');
title.textContent = 'Eval comparison';
const filter = el('input', 'filter');
filter.id = 'filter';
filter.type = 'search';
filter.placeholder = 'filter tasks (words, -word, is:flipped)';
filter.value = state.filter;
const counts = el('span', 'counts');
counts.id = 'counts';
header.append(title, filter, counts);
const table = el('table', 'matrix');
table.id = 'matrix';
const differences = el('div', 'differences');
differences.id = 'differences';
const status = el('div', 'status');
status.id = 'status';
document.body.append(header, table, differences, status);

filter.addEventListener('input', () => {
  state.filter = filter.value;
  save();
  render();
});

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  return e;
}

function save(): void {
  vscode.setState(state);
}

function sameSort(a: SortBy, b: SortBy): boolean {
  return a.by === b.by && (a.by !== 'job' || (b.by === 'job' && a.index === b.index));
}

function sortHeader(th: HTMLTableCellElement, sort: SortBy): void {
  th.classList.add('sortable');
  const active = sameSort(state.sort, sort);
  if (active) th.dataset.sorted = state.descending ? 'desc' : 'asc';
  th.addEventListener('click', () => {
    // A rate column starts high-to-low (best first); the name column starts A→Z.
    state.descending = active ? !state.descending : sort.by !== 'name';
    state.sort = sort;
    save();
    render();
  });
}

function render(): void {
  table.replaceChildren();
  const twoOrMore = view.jobs.length > 1;
  const head = table.createTHead().insertRow();
  const nameTh = el('th', 'task-col');
  nameTh.textContent = 'task';
  sortHeader(nameTh, { by: 'name' });
  head.append(nameTh);
  view.jobs.forEach((j, i) => {
    const th = el('th', 'job-col');
    th.dataset.job = String(i);
    th.textContent = `[${i + 1}] ${j.label}`;
    th.title = j.dir;
    sortHeader(th, { by: 'job', index: i });
    head.append(th);
  });
  if (twoOrMore) {
    const th = el('th', 'diff-col');
    th.textContent = `Δ [${view.jobs.length}]−[1]`;
    sortHeader(th, { by: 'difference' });
    head.append(th);
  }
  const rows = sortRows(filterRows(view.rows, state.filter), state.sort, state.descending);
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    tr.className = 'task-row';
    tr.dataset.task = r.task;
    if (r.flipped) tr.dataset.flipped = 'true';
    const name = tr.insertCell();
    name.className = 'task-name';
    name.textContent = r.flipped ? `${r.task} ⇄` : r.task;
    if (r.flipped) name.title = 'flipped: the majority outcome changed against [1]';
    r.cells.forEach((c, i) => {
      const td = tr.insertCell();
      td.className = 'cell';
      td.dataset.job = String(i);
      td.dataset.rate = c.rate === null ? '' : String(c.rate);
      td.dataset.trials = String(c.trials.length);
      td.textContent = c.rate === null ? '–' : pct(c.rate, 0);
      td.style.backgroundColor = c.colour;
      td.title = c.trials.length ? `${c.trials.length} trial(s): click opens ${c.trials[0]} in the debugger; shift-click picks one` : 'no trial yet';
      if (c.trials.length) {
        td.classList.add('clickable');
        td.addEventListener('click', (ev) => void open(i, r.task, ev.shiftKey || ev.altKey));
      }
    });
    if (twoOrMore) {
      const td = tr.insertCell();
      td.className = 'diff';
      td.textContent = r.difference === null ? '–' : signedPoints(r.difference);
      if (r.difference !== null) td.dataset.sign = r.difference > 0 ? 'up' : r.difference < 0 ? 'down' : 'same';
    }
  }
  const foot = table.createTFoot().insertRow();
  foot.className = 'overall';
  const label = foot.insertCell();
  label.textContent = 'overall';
  view.jobs.forEach((j, i) => {
    const td = foot.insertCell();
    td.className = 'overall-rate';
    td.dataset.job = String(i);
    td.textContent = `${pct(j.passRate)} (${j.scored} scored${j.masked ? `, ${j.masked} masked` : ''})`;
  });
  if (twoOrMore) {
    const last = view.differences.at(-1);
    const td = foot.insertCell();
    td.className = 'overall-diff';
    td.textContent = last ? signedPoints(last.mean) : '–';
    if (last) td.title = `mean per-task difference over the ${last.tasks} task(s) both jobs scored (the bootstrap's point estimate), not the difference of the overall rates`;
  }
  differences.replaceChildren(...view.differences.map((d) => {
    const line = el('div', 'difference');
    line.textContent = `${d.job} − ${d.against}: ${differenceLine(d)} (paired bootstrap over tasks, ${d.resamples} resamples)`;
    return line;
  }));
  const flipped = view.rows.filter((r) => r.flipped).length;
  counts.textContent = `${rows.length}/${view.rows.length} tasks · ${view.jobs.length} jobs${twoOrMore ? ` · ${flipped} flipped` : ''}`;
}

async function open(job: number, task: string, pick: boolean): Promise<void> {
  status.textContent = `opening ${task} of [${job + 1}]…`;
  try {
    const r = await ipc.sendRequest(OpenTrial, { job, task, pick }, 0);
    status.textContent = r.opened ? `opened ${r.opened} in the debugger` : r.reason ?? 'nothing opened';
  } catch (err) {
    status.textContent = (err as Error).message;
  }
}

ipc.onNotification(ComparisonChanged, ({ view: v }) => {
  view = v;
  render();
});

void ipc.sendRequest(GetComparison, undefined).then(
  (v) => {
    view = v;
    render();
  },
  (err: Error) => {
    status.textContent = err.message;
  },
);
