import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { potential } from './contract';
import { basename } from './expected';
import type { SynthesizedTask } from './generate';
import { PIPELINE_ENTRY } from './generate';
import { runProcess, scratchDir } from './host';
import { indexPath } from './render';

/**
 * The TypeScript grading path used by generation gates on a scratch workspace. It computes c_v from
 * W's expected artifacts on its own (it does not run progress.py), so the gates can require the
 * rendered Python grader and this implementation to agree on every state they visit.
 */
export interface TsGrade { phi: number; credit: Record<string, number> }

type Table = { header: string[]; rows: string[][] };

async function nonBlankLines(path: string): Promise<string[] | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch {
    return undefined;
  }
  const text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  return text.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
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

async function summaryCredit(path: string, want: Record<string, number>): Promise<number> {
  let seen: unknown;
  try {
    seen = JSON.parse(await readFile(path, 'utf8'));
  } catch {
    return 0;
  }
  if (!seen || typeof seen !== 'object' || Array.isArray(seen)) return 0;
  const obj = seen as Record<string, unknown>;
  const keys = Object.keys(want);
  // Python's json gives ints for integral numbers without a dot; JSON.parse cannot tell 3 from 3.0,
  // so integral-valued floats count here but not in the Python grader: expected values are integers
  // and the gate reports any disagreement.
  return keys.filter((k) => Number.isInteger(obj[k]) && obj[k] === want[k]).length / keys.length;
}

async function pipelineCredit(t: SynthesizedTask, app: string): Promise<number> {
  const entry = join(app, PIPELINE_ENTRY);
  if (!(await readFile(entry).then(() => true, () => false))) return 0;
  const scratch = await scratchDir('tbrl-synth-tsgrade-');
  const watched = [t.spec.out.clean, t.spec.out.enriched, t.spec.out.report, t.spec.out.summary].map((p) => join(app, p));
  const saved = await Promise.all(watched.map((p) => readFile(p).catch(() => undefined)));
  try {
    const input = join(scratch.dir, 'in');
    await cp(join(app, 'data'), input, { recursive: true, verbatimSymlinks: true });
    const holdout = t.draw.world.partitions[t.draw.holdoutPartition].file;
    const index = join(input, indexPath(t.spec).replace(/^data\//, ''));
    const kept = (await readFile(index, 'utf8')).split('\n').filter((row) => row.split('\t')[0] !== holdout);
    await writeFile(index, kept.join('\n'));
    await rm(join(index, '..', holdout), { force: true });
    const output = join(scratch.dir, 'out');
    await mkdir(output);
    // The exit code does not matter: only the report it leaves behind is compared with W.
    await runProcess(['bash', entry, input, output], { cwd: scratch.dir, timeoutMs: 60_000 });
    const holdoutReport = JSON.parse(t.taskFiles['tests/progress.json']).pipeline.expected_report as Table;
    return tableCredit(await nonBlankLines(join(output, basename(t.spec.out.report))), holdoutReport) === 1 ? 1 : 0;
  } finally {
    await scratch.dispose();
    // A pipeline that ignores its output argument must not change the workspace being measured.
    await Promise.all(watched.map(async (p, i) => {
      const before = saved[i];
      const now = await readFile(p).catch(() => undefined);
      if (before === undefined) { if (now !== undefined) await rm(p, { force: true }); } else if (!now || !now.equals(before)) await writeFile(p, before);
    }));
  }
}

export async function gradeInTypeScript(t: SynthesizedTask, app: string): Promise<TsGrade> {
  const e = t.expected;
  const credit: Record<string, number> = {};
  for (const node of t.contract.nodes) {
    // Same skip rule as the Python grader: a node whose ancestors have no credit is not graded.
    const ancestorsZero = node.preconditions.some((p) => potentialGate(t, credit, p) === 0);
    if (ancestorsZero) {
      credit[node.id] = 0;
      continue;
    }
    switch (node.id) {
      case 'clean': credit[node.id] = tableCredit(await nonBlankLines(join(app, t.spec.out.clean)), e.clean); break;
      case 'enriched': credit[node.id] = tableCredit(await nonBlankLines(join(app, t.spec.out.enriched)), e.enriched); break;
      case 'report': credit[node.id] = tableCredit(await nonBlankLines(join(app, t.spec.out.report)), e.report); break;
      case 'summary': credit[node.id] = await summaryCredit(join(app, t.spec.out.summary), e.summary as unknown as Record<string, number>); break;
      case 'pipeline': credit[node.id] = await pipelineCredit(t, app); break;
      default: credit[node.id] = 0;
    }
  }
  return { phi: potential(t.contract, credit), credit };
}

/** Gated credit of one node from the raw credits graded so far (min over it and its ancestors). */
function potentialGate(t: SynthesizedTask, credit: Record<string, number>, id: string): number {
  const node = t.contract.nodes.find((n) => n.id === id)!;
  return Math.min(credit[id], ...node.preconditions.map((p) => potentialGate(t, credit, p)));
}
