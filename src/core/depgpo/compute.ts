import { posix } from 'node:path';
import type { CommandTrace, VerifierTrace } from '../trace/types';
import { stepFactors } from './factors';
import { SubstringMatcher } from './matcher';
import { Provenance } from './provenance';
import type { CommandScore, DepgpoEdge, DepgpoInput, DepgpoResult, EdgeKind, ResourceSet } from './types';

export const DEFAULT_BETA = 0.5;
const MAX_LABELS = 5;
/** Shared empty result for the many commands without ports or processes (never mutated). */
const NONE: never[] = [];

/**
 * DepGPO credit for one trajectory. Each rule, with the wording of DESIGN.md and how it is read here:
 *
 * Nodes — "nodes are commands": every bash or file action, in execution order (index = position in
 * `input.commands`). Reads inside a command are taken to happen before its writes.
 *
 * File edge — "c1 -> c2 exists when c2 reads a file (file level) that holds lines written by c1
 * (line level) that are still there; an overwrite alone makes no edge": when c2 reads path F, every
 * command that owns at least one line of F at that moment (line provenance carried through later
 * edits, see Provenance) gets an edge to c2. A command that only writes F reads nothing, so no edge.
 *
 * Stdout edge — "a value (path, port, id) printed by c1 appears in c2's text and does not appear in
 * the task instruction": a value from c1's `stdoutValues` that occurs in c2's text (c1 < c2) and not
 * in the instruction. "Occurs" means as a whole value, not as part of a longer word: where the value
 * starts or ends with [A-Za-z0-9_], the neighbouring text character must not be one (regex `\b`),
 * so port 80 does not appear in "8080" nor /tmp/build-1 in /tmp/build-12, while /tmp/build-1 does
 * appear in /tmp/build-1/out. Every earlier command that printed the value gets an edge.
 * Both kinds point forward in time, so the graph is acyclic by construction.
 *
 * E — "files, ports and processes the verifier actually inspected (minus files the verifier itself
 * wrote)": verifier reads minus verifier writes, plus its ports and processes.
 *
 * Write score — "q(c) = |W_c ∩ reach(E)| / |W_c|, no distance decay; indirect credit only when the
 * consumer writes to a file other than its input and does not overwrite the counted input lines".
 * W_c = the lines c wrote (inserted or replaced, over all its hunks). A line l of c in file F reaches
 * E when either
 *   (direct)   l is still in F at verification time and F ∈ E, or
 *   (indirect) some later command c' reads F while l is there, does not itself remove or replace l
 *              (l survives c'), and c' has lines in some file G ≠ F that reach E (recursively).
 * A consumer that only writes back into F ("writes to its input") passes no credit; lines of F that
 * the consumer replaces are not counted. Every line counts once (binary reach), at weight 1.
 *
 * Read score — "q(r) = Σ β^d · Contrib(c) over writes reachable from r's stdout edges, shortest path,
 * each counted once, β = 0.5": breadth-first over stdout edges only, starting at r; every write
 * command c (|W_c| > 0, c ≠ r) reached at shortest distance d adds β^d · q(c). File edges are not
 * followed: a writer's q already includes whatever its file consumers pass on.
 *
 * Ports/processes — "1 if the verifier checked them, else 0": a command that bound or connected to
 * ports, or left processes running, scores 1 when any of them is in E, else 0. Processes match by
 * pid when both sides name one ("pid:comm"), else by command name.
 *
 * Metadata — "file existence and metadata checks count as inspected resources": a command that
 * changed a file's metadata or existence (chmod, chown, touch's utimensat, rename — both names —,
 * unlink) scores 1 when the verifier read or checked that file (opened it, access(), a failed open:
 * E's files plus E.checked) and no later command changed that file's metadata again, else 0. A
 * content write is not a metadata change: chmod +x then an edit still leaves the chmod credited.
 *
 * Command score = the largest of the parts that apply (a command that both writes and prints a path,
 * or writes and starts a server, is credited for whichever contribution is largest); 0 when none.
 * Step score = max over the step's commands: a step gets credit if any of its commands contributed,
 * and a step with several commands is one model turn, so its credit cannot be split among them;
 * a step without commands (todo, scratchpad, finish only) scores 0.
 */
export function computeDepgpo(input: DepgpoInput): DepgpoResult {
  const warnings: string[] = [];
  const beta = input.beta ?? DEFAULT_BETA;
  const commands = input.commands;
  const n = commands.length;
  const traces = commands.map((c) => normalizeTrace(c.trace));
  const resources = resourceSet(input.verifier);
  const eFiles = new Set(resources.files);

  const provenance = new Provenance((m) => warnings.push(m));
  const edges = new EdgeSet(n);
  const written = new Float64Array(n);
  const readFiles: number[][] = new Array(n);
  const matcher = buildMatcher(traces, input.instruction);

  for (let c = 0; c < n; c++) {
    const trace = traces[c];
    for (const id of matcher.find(commands[c].text ?? '')) {
      const label = [matcher.values[id]];
      for (const printer of matcher.printers[id]) {
        if (printer >= c) break;
        edges.add(printer, c, 'stdout', label);
      }
    }
    const reads: number[] = [];
    for (const path of trace.reads) {
      reads.push(provenance.fileId(path));
      const label = [path];
      for (const owner of provenance.ownersOf(path)) if (owner !== c) edges.add(owner, c, 'file', label);
    }
    readFiles[c] = reads;
    for (const write of trace.writes) written[c] += provenance.apply(c, write);
  }
  provenance.finish(n);

  const reach = writeReach(n, provenance, eFiles, readFiles);
  const edgeList = edges.list();
  const commandScores: CommandScore[] = [];
  const writeScore = (c: number): number => (written[c] > 0 ? reach.lines[c] / written[c] : 0);
  const stdoutOut = adjacency(n, edgeList, 'stdout');
  const seen = new Int32Array(n).fill(-1);
  const sinkPorts: Array<readonly number[]> = [];
  const sinkProcesses: Array<readonly string[]> = [];
  const ePorts = new Set(resources.ports);
  const eProcs = resources.processes.map(parseProcess);
  const eMeta = new Set([...resources.files, ...(resources.checked ?? [])]);
  // The metadata of a file is whatever its last chmod/chown/touch/rename/unlink left.
  const lastMetaWriter = new Map<string, number>();
  traces.forEach((t, c) => {
    for (const p of t.metaWrites ?? NONE) lastMetaWriter.set(p, c);
  });

  for (let c = 0; c < n; c++) {
    const trace = traces[c];
    const score: CommandScore = { score: 0, linesWritten: written[c], linesReachingE: reach.lines[c] };
    if (written[c] > 0) score.write = writeScore(c);
    if (stdoutOut[c].length > 0) score.read = readScore(c, stdoutOut, seen, beta, written, writeScore);
    const ports = trace.ports.length === 0 ? NONE : trace.ports.filter((p) => ePorts.has(p));
    const procs = trace.processes.length === 0 ? NONE : trace.processes.filter((p) => eProcs.some((e) => sameProcess(parseProcess(p), e)));
    if (trace.ports.length > 0 || trace.processes.length > 0) score.portProcess = ports.length + procs.length > 0 ? 1 : 0;
    if (trace.metaWrites?.length) score.metadata = trace.metaWrites.some((p) => eMeta.has(p) && lastMetaWriter.get(p) === c) ? 1 : 0;
    score.score = Math.max(0, score.write ?? 0, score.read ?? 0, score.portProcess ?? 0, score.metadata ?? 0);
    commandScores.push(score);
    sinkPorts.push(ports.length > 1 ? [...new Set(ports)] : ports);
    sinkProcesses.push(procs.length > 1 ? [...new Set(procs)] : procs);
  }

  let stepCount = input.stepTokens.length;
  for (const cmd of commands) if (Number.isInteger(cmd.step) && cmd.step >= stepCount) stepCount = cmd.step + 1;
  const stepScores = new Array<number>(stepCount).fill(0);
  commands.forEach((cmd, c) => {
    if (Number.isInteger(cmd.step) && cmd.step >= 0) stepScores[cmd.step] = Math.max(stepScores[cmd.step], commandScores[c].score);
    else warnings.push(`command ${c} has no valid step index (${String(cmd.step)}); it was left out of the step scores.`);
  });

  const unusable = unusableReason(input);
  const computed = stepFactors(stepScores, input.stepTokens);
  const factors = unusable ? { factors: new Array<number>(stepCount).fill(1), z: 1, fallback: unusable } : computed;
  return {
    resources,
    edges: edgeList,
    commandScores,
    stepScores,
    factors: factors.factors,
    z: factors.z,
    ...(factors.fallback ? { fallback: factors.fallback } : {}),
    traced: !unusable,
    warnings,
    sinkFiles: reach.sinkFiles,
    sinkPorts,
    sinkProcesses,
  };
}

/**
 * Lines of each command that reach E, walking commands backwards so that every consumer's own reach
 * is known before the lines it consumed are judged. A line of c in F with lifetime [c, d) reaches E
 * iff (d = verification and F ∈ E) or the earliest qualifying consumer of F after c comes before d.
 */
function writeReach(n: number, prov: Provenance, eFiles: Set<string>, readFiles: number[][]): { lines: Float64Array; sinkFiles: string[][] } {
  const fileCount = prov.paths.length;
  const isE = new Uint8Array(fileCount);
  prov.paths.forEach((p, i) => (isE[i] = eFiles.has(p) ? 1 : 0));
  // Group removal events by owner (counting sort): O(events).
  const events = prov.evOwner.length;
  const start = new Int32Array(n + 1);
  for (let e = 0; e < events; e++) start[prov.evOwner[e] + 1]++;
  for (let c = 0; c < n; c++) start[c + 1] += start[c];
  const order = new Int32Array(events);
  const fill = start.slice(0, n);
  for (let e = 0; e < events; e++) order[fill[prov.evOwner[e]]++] = e;

  const lines = new Float64Array(n);
  const sinkFiles: string[][] = Array.from({ length: n }, () => []);
  const never = Number.MAX_SAFE_INTEGER;
  const nextConsumer = new Float64Array(fileCount).fill(never);
  const reachFiles = new Map<number, number>();
  for (let c = n - 1; c >= 0; c--) {
    reachFiles.clear();
    for (let k = start[c]; k < start[c + 1]; k++) {
      const e = order[k];
      const file = prov.evFile[e];
      const until = prov.evTime[e];
      const direct = until === n && isE[file] === 1;
      if (direct || nextConsumer[file] < until) {
        lines[c] += prov.evCount[e];
        reachFiles.set(file, (reachFiles.get(file) ?? 0) + prov.evCount[e]);
      }
      if (direct && !sinkFiles[c].includes(prov.paths[file])) sinkFiles[c].push(prov.paths[file]);
    }
    // c passes credit to the lines it read in F only through reaching lines in some other file.
    if (reachFiles.size === 0) continue;
    const only = reachFiles.size === 1 ? reachFiles.keys().next().value : -1;
    for (const f of readFiles[c]) if (f !== only) nextConsumer[f] = c;
  }
  return { lines, sinkFiles };
}

function readScore(r: number, out: number[][], seen: Int32Array, beta: number, written: Float64Array, writeScore: (c: number) => number): number {
  let total = 0;
  let frontier = [r];
  seen[r] = r;
  for (let d = 1; frontier.length > 0; d++) {
    const nextFrontier: number[] = [];
    const weight = beta ** d;
    for (const u of frontier) {
      for (const v of out[u]) {
        if (seen[v] === r) continue;
        seen[v] = r;
        if (written[v] > 0) total += weight * writeScore(v);
        nextFrontier.push(v);
      }
    }
    frontier = nextFrontier;
  }
  return total;
}

/** "No usable trace" in the paper's fallback rule: reasons to give every step f_t = 1. */
function unusableReason(input: DepgpoInput): string | undefined {
  if (input.tracing && !input.tracing.available) return `tracing unavailable${input.tracing.reason ? `: ${input.tracing.reason}` : ''}`;
  if (!input.verifier) return 'no verifier trace: the resource set E is unknown';
  if (input.commands.length > 0 && input.commands.every((c) => !c.trace)) return 'no command was traced';
  // A tracer killed mid-run (traced-sandbox.ts TRACER_LOST): the graph after it is blind, so no credit is given.
  const lost = input.commands.find((c) => c.trace?.incomplete?.startsWith('tracer lost'));
  if (lost) return lost.trace!.incomplete;
  // A command opened the tracer's window markers itself (traced-sandbox.ts FORGED_MARKER): its
  // trace is whole, but an agent hiding syscalls from the graph earns no graph-based credit.
  const forged = input.commands.find((c) => c.trace?.incomplete?.startsWith('forged trace marker'));
  if (forged) return forged.trace!.incomplete;
  return undefined;
}

export function resourceSet(verifier: VerifierTrace | undefined): ResourceSet {
  if (!verifier) return { files: [], ports: [], processes: [] };
  const wrote = new Set((verifier.writes ?? []).map(normalizePath));
  const files = unique((verifier.reads ?? []).map(normalizePath).filter((p) => p && !wrote.has(p)));
  const read = new Set(files);
  const checked = unique((Array.isArray(verifier.checked) ? verifier.checked : []).filter((p) => typeof p === 'string').map(normalizePath).filter((p) => p && !wrote.has(p) && !read.has(p)));
  return {
    files,
    ports: unique((verifier.ports ?? []).filter((p) => Number.isInteger(p))),
    processes: unique((verifier.processes ?? []).filter((p) => typeof p === 'string' && p !== '')),
    ...(checked.length ? { checked } : {}),
  };
}

interface Matcher {
  values: readonly string[];
  printers: number[][];
  find(text: string): number[];
}

function buildMatcher(traces: CommandTrace[], instruction: string): Matcher {
  const byValue = new Map<string, number[]>();
  traces.forEach((t, c) => {
    for (const v of t.stdoutValues) {
      if (typeof v !== 'string' || v === '') continue;
      const list = byValue.get(v);
      if (!list) byValue.set(v, [c]);
      else if (list[list.length - 1] !== c) list.push(c);
    }
  });
  const values = [...byValue.keys()];
  const ac = new SubstringMatcher(values);
  // Values the instruction already states are not evidence that one command fed another: they
  // get no printers, so they never make an edge.
  const printers = values.map((v) => byValue.get(v) ?? []);
  for (const id of ac.find(instruction ?? '')) printers[id] = [];
  return { values, printers, find: (text) => ac.find(text) };
}

/**
 * Edges are created target by target (all edges into c while processing c), so a stamp per source
 * finds an existing (from, c, kind) edge in O(1) without string keys; that matters when a read of a
 * busy file yields hundreds of edges. Labels are distinct by construction (reads are de-duplicated,
 * matched values are distinct), so only the first MAX_LABELS are kept and the rest counted.
 */
class EdgeSet {
  private readonly edges: DepgpoEdge[] = [];
  private readonly stamp: Int32Array[];
  private readonly slot: Int32Array[];
  private target = -1;
  private firstOfTarget = 0;

  constructor(n: number) {
    this.stamp = [new Int32Array(n).fill(-1), new Int32Array(n).fill(-1)];
    this.slot = [new Int32Array(n), new Int32Array(n)];
  }

  /**
   * `shared` is a one-element [label] array the caller reuses for every edge created by the same
   * read or value; an edge copies it only when it gets a second label. With hundreds of owners per
   * busy file this halves the allocations per edge.
   */
  add(from: number, to: number, kind: EdgeKind, shared: string[]): void {
    if (to !== this.target) this.beginTarget(to);
    const k = kind === 'file' ? 0 : 1;
    if (this.stamp[k][from] !== to) {
      this.stamp[k][from] = to;
      this.slot[k][from] = this.edges.length;
      this.edges.push({ from, to, kind, labels: shared, labelCount: 1 });
      return;
    }
    const edge = this.edges[this.slot[k][from]];
    edge.labelCount++;
    if (edge.labels.length < MAX_LABELS) edge.labels = [...edge.labels, shared[0]];
  }

  /** Sorted by target, then source, file before stdout. */
  list(): DepgpoEdge[] {
    this.beginTarget(-1);
    return this.edges;
  }

  private beginTarget(to: number): void {
    // Sort the finished target's (small) group in place; groups are already in target order.
    const first = this.firstOfTarget;
    let sorted = true;
    for (let i = first + 1; i < this.edges.length && sorted; i++) sorted = edgeOrder(this.edges[i - 1], this.edges[i]) <= 0;
    if (!sorted) {
      const group = this.edges.slice(first);
      group.sort(edgeOrder);
      for (let i = 0; i < group.length; i++) this.edges[first + i] = group[i];
    }
    this.firstOfTarget = this.edges.length;
    this.target = to;
  }
}

function edgeOrder(a: DepgpoEdge, b: DepgpoEdge): number {
  return a.from - b.from || (a.kind === b.kind ? 0 : a.kind === 'file' ? -1 : 1);
}

export function adjacency(n: number, edges: DepgpoEdge[], kind?: EdgeKind): number[][] {
  const out: number[][] = Array.from({ length: n }, () => []);
  for (const e of edges) if (!kind || e.kind === kind) out[e.from].push(e.to);
  return out;
}

/** Traces come from JSON written by another process: anything missing or malformed reads as "did nothing". */
function normalizeTrace(trace: CommandTrace | undefined): CommandTrace {
  const list = <T>(v: T[] | undefined): T[] => (Array.isArray(v) ? v : []);
  if (!trace) return { reads: [], writes: [], stdoutValues: [], ports: [], processes: [] };
  if (isClean(trace)) return trace;
  return {
    reads: unique(list(trace.reads).filter((p) => typeof p === 'string').map(normalizePath).filter(Boolean)),
    writes: list(trace.writes)
      .filter((w) => w && typeof w.path === 'string')
      .map((w) => ({ ...w, path: normalizePath(w.path) })),
    stdoutValues: list(trace.stdoutValues),
    ports: list(trace.ports).filter((p) => Number.isInteger(p)),
    processes: list(trace.processes).filter((p) => typeof p === 'string' && p !== ''),
    metaWrites: unique(list(trace.metaWrites).filter((p) => typeof p === 'string').map(normalizePath).filter(Boolean)),
  };
}

/** The common case (a trace our own tracer wrote) needs no copy: checking is cheaper than copying. */
function isClean(t: CommandTrace): boolean {
  if (!Array.isArray(t.reads) || !Array.isArray(t.writes) || !Array.isArray(t.stdoutValues) || !Array.isArray(t.ports) || !Array.isArray(t.processes)) return false;
  for (const p of t.reads) if (typeof p !== 'string' || p === '' || normalizePath(p) !== p) return false;
  if (t.reads.length > 1 && new Set(t.reads).size !== t.reads.length) return false;
  for (const w of t.writes) if (!w || typeof w.path !== 'string' || w.path === '' || normalizePath(w.path) !== w.path) return false;
  for (const p of t.ports) if (!Number.isInteger(p)) return false;
  for (const p of t.processes) if (typeof p !== 'string' || p === '') return false;
  if (t.metaWrites !== undefined && (!Array.isArray(t.metaWrites) || t.metaWrites.some((p) => typeof p !== 'string' || p === '' || normalizePath(p) !== p))) return false;
  return true;
}

export function normalizePath(path: string): string {
  if (typeof path !== 'string' || path === '') return '';
  // Tracers emit absolute, clean paths almost always; skip the allocation then.
  if (path.charCodeAt(0) === 47 && !path.includes('//') && !path.includes('/.') && (path.length === 1 || !path.endsWith('/'))) return path;
  const p = posix.normalize(path);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

interface ProcessRef {
  pid?: number;
  comm?: string;
}

/** "1234:nginx", "1234" or "nginx". */
export function parseProcess(s: string): ProcessRef {
  const m = /^(\d+)(?::(.*))?$/.exec(s);
  if (m) return { pid: Number(m[1]), ...(m[2] ? { comm: m[2] } : {}) };
  return { comm: s };
}

export function sameProcess(a: ProcessRef, b: ProcessRef): boolean {
  if (a.pid !== undefined && b.pid !== undefined) return a.pid === b.pid;
  return a.comm !== undefined && a.comm === b.comm;
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}
