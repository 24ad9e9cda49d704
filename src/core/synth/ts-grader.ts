import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, type Dirent } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { join, relative, sep } from 'node:path';
import { potential } from './contract';
import { basename } from './expected';
import type { DataDigest, SynthesizedTask } from './generate';
import { PIPELINE_ENTRY } from './generate';
import { copyTree, fastScratchDir, removeTree, runProcess, scratchDir, treeImage, writeTreeImage } from './host';
import type { RunProcess } from './spawner';
import { indexPath } from './render';

/**
 * The TypeScript grading path used by generation gates on a scratch workspace. It computes c_v from
 * W's expected artifacts and the contract's evidence rules on its own (it does not run
 * progress.py), so the gates can require the rendered Python grader and this implementation to
 * agree on every state they visit.
 */
export interface TsGrade { phi: number; credit: Record<string, number>; evidence: Record<string, boolean>; inputsIntact: boolean }

type Table = { header: string[]; rows: string[][] };
type Role = 'clean' | 'enriched' | 'report' | 'summary';
const ROLES: Role[] = ['clean', 'enriched', 'report', 'summary'];

// File reads are synchronous: small files on the gates' scratch disk, and fs.promises.readFile's
// open / fstat / read / close round trips through the thread pool cost more CPU than the reads.
const readOrUndefined = (path: string): Buffer | undefined => {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
};

async function nonBlankLines(path: string): Promise<string[] | undefined> {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return undefined;
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    return undefined;
  }
  return text.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
}

async function jsonOf(path: string): Promise<unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export function tableCredit(lines: string[] | undefined, want: Table): number {
  if (!lines || lines.length === 0 || lines[0] !== want.header.join(',')) return 0;
  const expected = want.rows.map((r) => r.join(','));
  const got = lines.slice(1);
  const pool = new Map<string, number>();
  for (const e of expected) pool.set(e, (pool.get(e) ?? 0) + 1);
  let hits = 0;
  for (const g of got) {
    const n = pool.get(g) ?? 0;
    if (n > 0) {
      pool.set(g, n - 1);
      hits++;
    }
  }
  const size = Math.max(expected.length, got.length);
  if (size === 0) return 1;
  if (hits === size && got.some((g, i) => g !== expected[i])) return 0.5;
  return hits / size;
}

function summaryCredit(seen: unknown, want: Record<string, number>): number {
  if (!seen || typeof seen !== 'object' || Array.isArray(seen)) return 0;
  const obj = seen as Record<string, unknown>;
  const keys = Object.keys(want);
  // Python's json gives ints for integral numbers without a dot; JSON.parse cannot tell 3 from 3.0,
  // so integral-valued floats count here but not in the Python grader: expected values are integers
  // and the gate reports any disagreement.
  return keys.filter((k) => Number.isInteger(obj[k]) && obj[k] === want[k]).length / keys.length;
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function walk(dir: string): string[] {
  const out: string[] = [];
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    entries = [];
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** Row digests already read, by the database file's content hash, table and columns (see sqliteDigest). */
export type SqliteDigestCache = Map<string, string>;

/**
 * Rows of one SQLite table: there is no SQLite binding in this Node, so python3's module reads it.
 * The rows are a function of the file's bytes (a -wal or -journal file beside it would change that, but
 * inputsIntact fails on any file not shipped before it reads a table), so with a `cache` a digest is
 * read once per distinct database file (every untouched workspace of a task holds the same bytes)
 * rather than by a python3 per grading.
 */
async function sqliteDigest(path: string, table: string, columns: string[], env: Record<string, string> = {}, cache?: SqliteDigestCache, run: RunProcess = runProcess): Promise<string | undefined> {
  const bytes = cache ? readOrUndefined(path) : undefined;
  const key = bytes ? `${sha(bytes)}\0${table}\0${columns.join(',')}` : undefined;
  if (key && cache?.has(key)) return cache.get(key);
  const r = await run(['python3', '-c', 'import json,sqlite3,sys\nc=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)\nprint(json.dumps([[str(v) for v in row] for row in c.execute(sys.argv[2]).fetchall()]))', path, `SELECT ${columns.join(', ')} FROM ${table} ORDER BY rowid`], { env });
  const digest = r.code === 0 ? sha((JSON.parse(r.stdout) as string[][]).map((row) => row.join('\t')).join('\n')) : undefined;
  // Only successful reads are kept: a failure may be the host's (a process limit), not the file's.
  if (digest !== undefined && key) cache?.set(key, digest);
  return digest;
}

export async function inputsIntact(dataDir: string, digest: DataDigest, env: Record<string, string> = {}, cache?: SqliteDigestCache, run?: RunProcess): Promise<boolean> {
  const present = walk(dataDir).map((p) => relative(dataDir, p).split(sep).join('/')).sort();
  const declared = [...Object.keys(digest.files), ...Object.keys(digest.tables)].sort();
  if (!isDeepStrictEqual(present, declared)) return false;
  for (const [rel, want] of Object.entries(digest.files)) {
    const buf = readOrUndefined(join(dataDir, rel));
    if (!buf || sha(buf) !== want) return false;
  }
  for (const [rel, t] of Object.entries(digest.tables)) {
    if ((await sqliteDigest(join(dataDir, rel), t.table, t.columns, env, cache, run)) !== t.digest) return false;
  }
  return true;
}

interface Produced { full: Partial<Record<Role, unknown>>; held: Partial<Record<Role, unknown>> }

async function readRole(path: string, role: Role): Promise<unknown> {
  return role === 'summary' ? jsonOf(path) : nonBlankLines(path);
}

/** Run the agent's entry point on a private copy of the data and on one without the hold-out partition. */
async function rerunEntry(t: SynthesizedTask, app: string, env: Record<string, string>, io: GradeIo): Promise<Produced> {
  const scratch = await (io.trees ?? PROMISE_TREES).scratch('tbrl-synth-tsgrade-', io.tmp);
  const outs = ROLES.map((r) => join(app, t.spec.out[r]));
  const saved = outs.map(readOrUndefined);
  const produced: Produced = { full: {}, held: {} };
  try {
    for (const variant of ['full', 'held'] as const) {
      const input = join(scratch.dir, `${variant}-data`);
      await (io.trees ?? PROMISE_TREES).copy(join(app, 'data'), input);
      if (variant === 'held') {
        const holdout = t.draw.world.partitions[t.draw.holdoutPartition].file;
        const index = join(input, indexPath(t.spec).replace(/^data\//, ''));
        const kept = readFileSync(index, 'utf8').split('\n').filter((row) => row.split('\t')[0] !== holdout);
        writeFileSync(index, kept.join('\n'));
        rmSync(join(index, '..', holdout), { force: true });
      }
      const output = join(scratch.dir, `${variant}-result`);
      mkdirSync(output);
      // The exit code does not matter: only what the run leaves behind is compared. With shared runs
      // (io.entryEnv), its output goes to /dev/null as progress.py's does, so the gate server may answer
      // it with progress.py's run of the same inputs.
      await (io.run ?? runProcess)(['bash', join(app, PIPELINE_ENTRY), input, output], { cwd: scratch.dir, env: io.entryEnv ?? env, timeoutMs: 60_000, discardOutput: io.entryEnv !== undefined });
      for (const role of ROLES) produced[variant][role] = await readRole(join(output, basename(t.spec.out[role])), role);
    }
    return produced;
  } finally {
    await scratch.dispose();
    // A pipeline that ignores its output argument must not change the workspace being measured.
    outs.forEach((p, i) => {
      const before = saved[i];
      const now = readOrUndefined(p);
      if (before === undefined) { if (now !== undefined) rmSync(p, { force: true }); } else if (!now || !now.equals(before)) writeFileSync(p, before);
    });
  }
}

/** The held-out run moved away from the full answer, and kept no row that only the dropped partition explains. */
function tracksHoldout(role: Role, held: unknown, full: unknown, wantFull: unknown, wantHeld: unknown): boolean {
  if (held === undefined || isDeepStrictEqual(held, full)) return false;
  if (role === 'summary') {
    if (!held || typeof held !== 'object' || Array.isArray(held)) return false;
    const h = held as Record<string, unknown>;
    const f = wantFull as Record<string, number>;
    const w = wantHeld as Record<string, number>;
    return Object.keys(f).every((k) => w[k] === f[k] || h[k] !== f[k]);
  }
  const gone = new Set((wantFull as Table).rows.map((r) => r.join(',')));
  for (const r of (wantHeld as Table).rows) gone.delete(r.join(','));
  return !(held as string[]).slice(1).some((line) => gone.has(line));
}

/**
 * How the grader starts processes (default Node's spawn) and where it makes its scratch copies (default
 * os.tmpdir()); `entryEnv`: the environment of its entry-point runs when they may be shared (gates.ts shareRuns).
 */
export interface GradeIo { run?: RunProcess; tmp?: string; trees?: TreeOps; entryEnv?: Record<string, string> }

/**
 * Copying a directory tree as fs.cp(src, dst, { recursive: true, verbatimSymlinks: true }) does,
 * removing one as fs.rm(path, { recursive: true, force: true }) does, and a scratch directory.
 */
export interface TreeOps {
  copy: (src: string, dst: string) => Promise<void>;
  remove: (path: string) => Promise<void>;
  scratch: (prefix: string, base?: string) => Promise<{ dir: string; dispose: () => Promise<void> }>;
  /**
   * Reads a tree that will not change and gives a copier of it: each call writes the tree `copy`
   * would have written at the time of reading (host.ts treeImage); undefined: use `copy`.
   */
  snapshot?: (src: string) => ((dst: string) => Promise<void>) | undefined;
}

/** fs.cp / fs.rm (the previous path). */
export const PROMISE_TREES: TreeOps = { copy: (src, dst) => cp(src, dst, { recursive: true, verbatimSymlinks: true }), remove: (path) => rm(path, { recursive: true, force: true }), scratch: scratchDir };
/** host.ts copyTree / removeTree: the same trees, one synchronous call per entry; snapshots held in memory. */
export const SYNC_TREES: TreeOps = {
  copy: copyTree,
  remove: removeTree,
  scratch: fastScratchDir,
  snapshot: (src) => {
    const image = treeImage(src);
    return image && ((dst) => writeTreeImage(image, dst));
  },
};

type ProgressSpec = { inputs: DataDigest; expected_holdout: Record<Role, unknown>; pipeline: { expected_report: Table } };
// progress.json parsed once per task (~30 gradings each), again only if the task's text changed.
const parsedProgress = new WeakMap<SynthesizedTask, { text: string; spec: ProgressSpec }>();
function progressSpec(t: SynthesizedTask): ProgressSpec {
  const text = t.taskFiles['tests/progress.json'];
  const known = parsedProgress.get(t);
  if (known && known.text === text) return known.spec;
  const spec = JSON.parse(text) as ProgressSpec;
  parsedProgress.set(t, { text, spec });
  return spec;
}

/** `env`: variables added to the processes it starts (the gate server's PATH); `cache`: SQLite row digests already read. */
export async function gradeInTypeScript(t: SynthesizedTask, app: string, env: Record<string, string> = {}, cache?: SqliteDigestCache, io: GradeIo = {}): Promise<TsGrade> {
  const progress = progressSpec(t);
  const e = t.expected;
  const seen = {} as Record<Role, unknown>;
  const artifact = {} as Record<Role, number>;
  for (const role of ROLES) {
    seen[role] = await readRole(join(app, t.spec.out[role]), role);
    artifact[role] = role === 'summary' ? summaryCredit(seen[role], e.summary as unknown as Record<string, number>) : tableCredit(seen[role] as string[] | undefined, e[role]);
  }
  const intact = await inputsIntact(join(app, 'data'), progress.inputs, env, cache, io.run);
  const hasEntry = (() => {
    try {
      return statSync(join(app, PIPELINE_ENTRY)).isFile();
    } catch {
      return false;
    }
  })();
  const runs = intact && hasEntry && Math.max(...Object.values(artifact)) > 0 ? await rerunEntry(t, app, env, io) : undefined;
  const credit: Record<string, number> = {};
  const evidence: Record<string, boolean> = {};
  for (const node of t.contract.nodes) {
    if ((ROLES as string[]).includes(node.id)) {
      const role = node.id as Role;
      const ok = runs !== undefined && isDeepStrictEqual(runs.full[role], seen[role]) && tracksHoldout(role, runs.held[role], runs.full[role], e[role], progress.expected_holdout[role]);
      evidence[role] = ok;
      credit[role] = ok ? artifact[role] : 0;
    } else {
      const heldReport = runs?.held.report as string[] | undefined;
      evidence[node.id] = heldReport !== undefined && tableCredit(heldReport, progress.pipeline.expected_report) === 1;
      credit[node.id] = evidence[node.id] ? 1 : 0;
    }
  }
  return { phi: potential(t.contract, credit), credit, evidence, inputsIntact: intact };
}
