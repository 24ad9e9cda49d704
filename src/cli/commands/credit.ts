import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { readTrajectory } from '../../core/trajectory/reader';
import type { Trajectory } from '../../core/trajectory/reader';
import { creditForGroup } from '../../core/depgpo/credit';
import type { GroupBy } from '../../core/depgpo/credit';

export const creditCommand: CliCommand = {
  name: 'credit',
  summary: 'Group-relative advantages and per-step DepGPO advantages for a group of rollouts (JSON for training)',
  usage: 'credit <trajectory.jsonl | run-dir>... [--group-by task|all] [--no-std] [--beta 0.5] [-o advantages.json]',
  options: {
    'group-by': { type: 'string' },
    'no-std': { type: 'boolean' },
    beta: { type: 'string' },
    out: { type: 'string', short: 'o' },
  },
  async run({ positionals, values }) {
    if (positionals.length === 0) throw new UsageError('expected trajectories (e.g. tbrl credit runs/*/trajectory.jsonl --group-by task -o advantages.json)');
    const groupBy = (values['group-by'] as string | undefined) ?? 'task';
    if (groupBy !== 'task' && groupBy !== 'all') throw new UsageError(`--group-by must be task or all, not "${groupBy}"`);
    const beta = values.beta === undefined ? undefined : Number(values.beta);
    if (beta !== undefined && !(beta > 0 && beta <= 1)) throw new UsageError(`--beta must be a number in (0, 1], e.g. --beta 0.5 (got "${String(values.beta)}")`);

    const trajectories: Trajectory[] = [];
    for (const p of positionals) {
      const t = await readTrajectory(p.endsWith('.jsonl') ? p : `${p.replace(/\/$/, '')}/trajectory.jsonl`);
      for (const w of t.warnings) console.error(`warning: ${w}`);
      trajectories.push(t);
    }
    const credit = creditForGroup(trajectories, { groupBy: groupBy as GroupBy, normalizeStd: values['no-std'] !== true, ...(beta !== undefined ? { beta } : {}) });

    const f = (x: number): string => (x >= 0 ? ' ' : '') + x.toFixed(4);
    for (const g of credit.groups) {
      console.log(`Group ${g.key}: ${g.size} rollout(s), mean reward ${g.mean.toFixed(4)}, std ${g.std.toFixed(4)}`);
      for (const t of credit.trajectories.filter((x) => x.group === g.key)) {
        console.log(`  ${t.runId}  R=${t.reward.toFixed(4)}  Â=${f(t.groupAdvantage)}  Z=${t.z.toFixed(4)}${t.fallback ? `  fallback: ${t.fallback}` : ''}`);
        console.log(`    Â_t: ${t.steps.map((s) => f(s.advantage).trim()).join(' ')}`);
      }
    }
    for (const s of credit.skipped) console.error(`skipped ${s.path}: ${s.reason}`);
    if (typeof values.out === 'string') {
      await mkdir(dirname(values.out), { recursive: true });
      await writeFile(values.out, JSON.stringify(credit, null, 2) + '\n', 'utf8');
      console.log(`Advantages -> ${values.out}`);
    }
    return credit.trajectories.length > 0 ? 0 : 1;
  },
};
