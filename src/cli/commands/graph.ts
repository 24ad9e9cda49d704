import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { TbrlError } from '../../core/errors';
import { readTrajectory } from '../../core/trajectory/reader';
import type { Trajectory } from '../../core/trajectory/reader';
import { depgpoOfTrajectory } from '../../core/depgpo/trajectory';
import { buildGraphView, formatGraphText, toDot } from '../../core/depgpo/view';
import { pilotStats, LONG_TRAJECTORY_COMMANDS } from '../../core/depgpo/stats';

export const graphCommand: CliCommand = {
  name: 'graph',
  summary: 'DepGPO dependency graph of a run: edges, resource set E, per-step scores and factors (DOT/JSON for the webview)',
  usage: 'graph <trajectory.jsonl | run-dir> [--dot out.dot] [--json out.json] [--beta 0.5]\n       tbrl graph --stats <dir> [--json out.json]',
  options: {
    dot: { type: 'string' },
    json: { type: 'string' },
    beta: { type: 'string' },
    stats: { type: 'string' },
  },
  async run({ positionals, values }) {
    const beta = parseBeta(values.beta);
    if (typeof values.stats === 'string') return stats(values.stats, values.json as string | undefined);
    if (positionals.length !== 1) throw new UsageError('expected one trajectory (e.g. tbrl graph runs/hello-world-20260101-000000/trajectory.jsonl --dot graph.dot)');
    const t = await readTrajectory(trajectoryPath(positionals[0]));
    for (const w of t.warnings) console.error(`warning: ${w}`);
    const { input, result } = depgpoOfTrajectory(t, beta);
    const view = buildGraphView(input, result, { runId: t.header.runId, taskId: t.header.task?.id });
    console.log(`Run ${t.header.runId} (task ${t.header.task?.id}): ${input.commands.length} commands in ${t.steps.length} steps`);
    console.log(formatGraphText(view));
    if (typeof values.dot === 'string') {
      await writeOut(values.dot, toDot(view));
      console.log(`DOT -> ${values.dot}`);
    }
    if (typeof values.json === 'string') {
      await writeOut(values.json, JSON.stringify(view, null, 2) + '\n');
      console.log(`JSON -> ${values.json}`);
    }
    return 0;
  },
};

function parseBeta(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  const beta = Number(raw);
  if (!(beta > 0 && beta <= 1)) throw new UsageError(`--beta must be a number in (0, 1], e.g. --beta 0.5 (got "${String(raw)}")`);
  return beta;
}

function trajectoryPath(p: string): string {
  return p.endsWith('.jsonl') ? p : `${p.replace(/\/$/, '')}/trajectory.jsonl`;
}

async function writeOut(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text, 'utf8');
}

/** Every trajectory.jsonl (or other *.jsonl) below `dir`. */
async function findTrajectories(dir: string): Promise<string[]> {
  let info;
  try {
    info = await stat(dir);
  } catch {
    throw new TbrlError('graph-stats-dir', `${dir} does not exist.`, 'Pass a directory of runs, e.g. tbrl graph --stats runs/');
  }
  if (!info.isDirectory()) throw new TbrlError('graph-stats-dir', `${dir} is not a directory.`, 'Pass a directory of runs, e.g. tbrl graph --stats runs/');
  const entries = await readdir(dir, { recursive: true });
  return entries.map((e) => join(dir, String(e))).filter((p) => p.endsWith('.jsonl')).sort();
}

async function stats(dir: string, jsonOut: string | undefined): Promise<number> {
  const paths = await findTrajectories(dir);
  const loaded: Trajectory[] = [];
  const unreadable: Array<{ path: string; reason: string }> = [];
  for (const p of paths) {
    try {
      loaded.push(await readTrajectory(p));
    } catch (err) {
      unreadable.push({ path: p, reason: (err as Error).message.split('\n')[0] });
    }
  }
  if (loaded.length === 0) {
    throw new TbrlError('graph-stats-empty', `No readable trajectory under ${dir} (${paths.length} .jsonl file(s) found).`, 'Run tasks first (tbrl run <task> --policy oracle) and pass the runs directory.');
  }
  const s = pilotStats(loaded);
  const fmt = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));
  for (const p of s.perTrajectory) console.log(`  ${p.fraction.toFixed(3)}  ${String(p.onPath).padStart(3)}/${String(p.commands).padEnd(3)}  ${p.taskId}  ${p.path}`);
  for (const k of [...s.skipped, ...unreadable]) console.log(`  skipped  ${k.path}: ${k.reason}`);
  console.log(`Fraction of commands on a dependency path to E, over ${s.count} passing traced trajector${s.count === 1 ? 'y' : 'ies'}:`);
  console.log(`  median ${fmt(s.median)} (n=${s.count}); with ${LONG_TRAJECTORY_COMMANDS}+ commands: median ${fmt(s.median5)} (n=${s.count5})`);
  console.log('  (DepGPO paper, Terminal-Bench 2.0 reference solutions: 0.57 and 0.18)');
  if (jsonOut) {
    await writeOut(jsonOut, JSON.stringify({ ...s, skipped: [...s.skipped, ...unreadable] }, null, 2) + '\n');
    console.log(`JSON -> ${jsonOut}`);
  }
  return s.count > 0 ? 0 : 1;
}
