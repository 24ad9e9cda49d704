import type { CommandTrace } from '../trace/types';
import { normalizePath, parseProcess, resourceSet } from './compute';
import { stepFactors } from './factors';
import type { DepgpoInput } from './types';

/**
 * A deliberately plain implementation of the same rules as `computeDepgpo`: one object per line,
 * `splice` for every hunk, `includes` for every (earlier value, later command) pair, and the
 * indirect-credit rule checked line by line against every later command. Quadratic, but each step
 * reads like the rule it implements. It is the oracle of the property test that checks the fast
 * version on random trajectories, and the naive baseline of bench/depgpo.bench.ts.
 * Assumes well-formed traces (no repair of inconsistent hunks).
 */
export function referenceDepgpo(input: DepgpoInput): { edges: Array<[number, number, 'file' | 'stdout']>; scores: number[]; stepScores: number[]; factors: number[] } {
  const beta = input.beta ?? 0.5;
  const cmds = input.commands;
  const n = cmds.length;
  const traces: CommandTrace[] = cmds.map((c) => c.trace ?? { reads: [], writes: [], stdoutValues: [], ports: [], processes: [] });
  const E = resourceSet(input.verifier);

  interface Line { owner: number; file: string; died: number }
  const lines: Line[] = [];
  const files = new Map<string, Line[]>();
  const edges = new Set<string>();
  const readsOf: string[][] = [];
  const written = new Array<number>(n).fill(0);

  for (let c = 0; c < n; c++) {
    for (let p = 0; p < c; p++) {
      for (const v of traces[p].stdoutValues) {
        if (v && appears(v, cmds[c].text) && !appears(v, input.instruction)) edges.add(`${p},${c},stdout`);
      }
    }
    readsOf[c] = traces[c].reads.map(normalizePath);
    for (const path of readsOf[c]) for (const l of files.get(path) ?? []) if (l.owner >= 0 && l.owner !== c) edges.add(`${l.owner},${c},file`);
    for (const w of traces[c].writes) {
      const path = normalizePath(w.path);
      let content = files.get(path);
      if (w.deleted) {
        for (const l of content ?? []) l.died = c;
        files.delete(path);
        continue;
      }
      const growth = w.hunks.reduce((a, h) => a + h.newLines - h.oldLines, 0);
      if (!content) {
        content = Array.from({ length: w.linesAfter - growth }, () => ({ owner: -1, file: path, died: Infinity }));
        files.set(path, content);
      }
      // Right to left, so earlier hunks' old-content positions stay valid.
      for (const h of [...w.hunks].sort((a, b) => b.oldStart - a.oldStart)) {
        const at = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
        const fresh = Array.from({ length: h.newLines }, () => ({ owner: c, file: path, died: Infinity }));
        fresh.forEach((l) => lines.push(l));
        for (const gone of content.splice(at, h.oldLines, ...fresh)) gone.died = c;
        written[c] += h.newLines;
      }
    }
  }

  // reaches[c] = files in which c has a line that reaches E; filled from the last command back.
  const reaches: Array<Set<string>> = Array.from({ length: n }, () => new Set());
  const reached = new Array<number>(n).fill(0);
  const byOwner: Line[][] = Array.from({ length: n }, () => []);
  for (const l of lines) byOwner[l.owner].push(l);
  for (let c = n - 1; c >= 0; c--) {
    for (const l of byOwner[c]) {
      let ok = l.died === Infinity && E.files.includes(l.file);
      for (let k = c + 1; !ok && k < n && k < l.died; k++) {
        ok = readsOf[k].includes(l.file) && [...reaches[k]].some((f) => f !== l.file);
      }
      if (ok) {
        reached[c]++;
        reaches[c].add(l.file);
      }
    }
  }
  const q = (c: number): number => (written[c] > 0 ? reached[c] / written[c] : 0);
  const out: number[][] = Array.from({ length: n }, () => []);
  for (const e of edges) {
    const [f, t, k] = e.split(',');
    if (k === 'stdout') out[Number(f)].push(Number(t));
  }
  const stdoutOut = (c: number): number[] => out[c];
  const scores = cmds.map((_, c) => {
    const parts = [0];
    if (written[c] > 0) parts.push(q(c));
    const dist = new Map<number, number>([[c, 0]]);
    const queue = [c];
    for (let i = 0; i < queue.length; i++) for (const v of stdoutOut(queue[i])) if (!dist.has(v)) { dist.set(v, dist.get(queue[i])! + 1); queue.push(v); }
    let read = 0;
    for (const [v, d] of dist) if (v !== c && written[v] > 0) read += beta ** d * q(v);
    parts.push(read);
    const t = traces[c];
    const procHit = t.processes.some((p) => E.processes.some((e) => {
      const a = parseProcess(p);
      const b = parseProcess(e);
      return a.pid !== undefined && b.pid !== undefined ? a.pid === b.pid : a.comm !== undefined && a.comm === b.comm;
    }));
    if (t.ports.some((p) => E.ports.includes(p)) || procHit) parts.push(1);
    return Math.max(...parts);
  });
  const T = Math.max(input.stepTokens.length, ...cmds.map((c) => c.step + 1));
  const stepScores = new Array<number>(T).fill(0);
  cmds.forEach((c, i) => (stepScores[c.step] = Math.max(stepScores[c.step], scores[i])));
  const unusable = (input.tracing && !input.tracing.available) || !input.verifier || (n > 0 && cmds.every((c) => !c.trace));
  const factors = unusable ? stepScores.map(() => 1) : stepFactors(stepScores, input.stepTokens).factors;
  const edgeList = [...edges].map((e) => e.split(',')).map(([f, t, k]) => [Number(f), Number(t), k as 'file' | 'stdout'] as [number, number, 'file' | 'stdout']);
  return { edges: edgeList, scores, stepScores, factors };
}

/** The value as a whole token of the text: a regex with \b where the value's edge is a word character. */
function appears(value: string, text: string): boolean {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`${/^\w/.test(value) ? '\\b' : ''}${escaped}${/\w$/.test(value) ? '\\b' : ''}`).test(text);
}
