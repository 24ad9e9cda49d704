import { select } from 'd3-selection';
import { scaleLinear } from 'd3-scale';
import { line } from 'd3-shape';
import { axisBottom, axisLeft } from 'd3-axis';
import { Endpoint } from '../shared/ipc';
import { ChartsChanged, GetDashboard, JobChanged, LogAppended, type ChartView, type JobView } from './protocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const ipc = new Endpoint((m) => vscode.postMessage(m));
window.addEventListener('message', (e) => void ipc.receive(e.data));

// Everything is built with createElement/textContent: log lines and job messages are untrusted text.
const header = el('div', 'header');
const title = el('span', 'title');
const status = el('span', 'job-status');
status.id = 'job-status';
const tail = el('span', 'tail-state');
tail.id = 'tail-state';
header.append(title, status, tail);
const message = el('div', 'job-message');
const charts = el('div', 'charts');
charts.id = 'charts';
const logBox = el('pre', 'log');
logBox.id = 'log';
document.body.append(header, message, charts, logBox);

const LOG_KEEP = 256 * 1024;
const W = 320;
const H = 170;
const M = { top: 22, right: 12, bottom: 22, left: 46 };

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  return e;
}

function showJob(job: JobView, tailState: string): void {
  title.textContent = job.submissionId;
  status.textContent = job.status;
  status.dataset.status = job.status;
  tail.textContent = `log: ${tailState}`;
  message.textContent = [job.metadata?.preset && `preset ${job.metadata.preset}`, job.metadata?.algorithm, job.message].filter(Boolean).join(' · ');
}

function appendLog(text: string): void {
  const atBottom = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
  logBox.textContent = ((logBox.textContent ?? '') + text).slice(-LOG_KEEP);
  if (atBottom) logBox.scrollTop = logBox.scrollHeight;
}

function drawCharts(views: ChartView[]): void {
  const root = select(charts);
  const boxes = root.selectAll<HTMLDivElement, ChartView>('div.chart').data(views, (d) => d.id);
  const entered = boxes.enter().append('div').attr('class', 'chart').attr('data-chart', (d) => d.id);
  entered.append('div').attr('class', 'chart-title');
  const svg = entered.append('svg').attr('viewBox', `0 0 ${W} ${H}`);
  svg.append('g').attr('class', 'x-axis').attr('transform', `translate(0,${H - M.bottom})`);
  svg.append('g').attr('class', 'y-axis').attr('transform', `translate(${M.left},0)`);
  svg.append('path').attr('class', 'series');
  svg.append('text').attr('class', 'empty').attr('x', W / 2).attr('y', H / 2).attr('text-anchor', 'middle');
  const all = entered.merge(boxes);
  all.attr('data-points', (d) => String(d.points.length));
  all.select('.chart-title').text((d) => `${d.title}${d.last ? `: ${formatValue(d.last.value)} @ step ${d.last.step}` : ''}${d.dropped ? ` (${d.dropped} non-finite)` : ''}`);
  all.each(function (d) {
    const g = select(this).select('svg');
    const x = scaleLinear().domain(d.xDomain).range([M.left, W - M.right]);
    const y = scaleLinear().domain(d.yDomain).nice().range([H - M.bottom, M.top]);
    g.select<SVGGElement>('.x-axis').call(axisBottom(x).ticks(5).tickFormat((v) => String(v)));
    g.select<SVGGElement>('.y-axis').call(axisLeft(y).ticks(4));
    const path = line<{ step: number; value: number }>().x((p) => x(p.step)).y((p) => y(p.value));
    g.select('.series').attr('d', d.points.length ? path(d.points) : null);
    // A line needs two points; dots keep early steps (and a one-step dryrun) visible.
    g.selectAll<SVGCircleElement, { step: number; value: number }>('circle.point')
      .data(d.points.length <= 60 ? d.points : [])
      .join('circle')
      .attr('class', 'point')
      .attr('r', 2.5)
      .attr('cx', (p) => x(p.step))
      .attr('cy', (p) => y(p.value));
    g.select('.empty').text(d.points.length ? '' : 'no data yet');
  });
}

function formatValue(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.001 && v !== 0) ? v.toExponential(2) : v.toFixed(3);
}

ipc.onNotification(JobChanged, ({ job, tailState }) => showJob(job, tailState));
ipc.onNotification(LogAppended, ({ text }) => appendLog(text));
ipc.onNotification(ChartsChanged, ({ charts: views }) => drawCharts(views));

void ipc.sendRequest(GetDashboard, undefined).then(
  (p) => {
    showJob(p.job, p.tailState);
    logBox.textContent = '';
    appendLog(p.log);
    drawCharts(p.charts);
  },
  (err: Error) => {
    message.textContent = err.message;
  },
);
