import { OUTCOME_CLASSES } from '../run/outcome';
import type { JobResults } from './job';
import type { Comparison } from './compare';

const pct = (x: number | null | undefined): string => (x === null || x === undefined ? '   –  ' : `${(x * 100).toFixed(1).padStart(5)}%`);
const num = (x: number | null | undefined, d = 3): string => (x === null || x === undefined ? '–' : x.toFixed(d));

/** The table `tbrl eval --summary` prints. */
export function formatResults(results: JobResults, jobDir: string): string {
  const o = results.overall;
  const ks = Object.keys(o.passAtK).map(Number).sort((a, b) => a - b);
  const width = Math.max(4, ...results.tasks.map((t) => t.task.length));
  const lines: string[] = [];
  lines.push(`Job ${jobDir}: ${o.trials}/${results.expectedTrials} trials${results.complete ? '' : ' (incomplete: `tbrl eval --resume` runs the rest)'}`);
  lines.push('');
  lines.push(`${'task'.padEnd(width)}  trials  masked  mean reward  ${ks.map((k) => `pass@${k}`.padStart(7)).join(' ')}`);
  for (const t of results.tasks) {
    lines.push(`${t.task.padEnd(width)}  ${String(t.trials).padStart(6)}  ${String(t.masked).padStart(6)}  ${num(t.meanReward).padStart(11)}  ${ks.map((k) => pct(t.passAtK[k]).padStart(7)).join(' ')}`);
  }
  lines.push(`${'all'.padEnd(width)}  ${String(o.trials).padStart(6)}  ${String(o.masked).padStart(6)}  ${num(o.meanReward).padStart(11)}  ${ks.map((k) => pct(o.passAtK[k]).padStart(7)).join(' ')}`);
  lines.push('');
  lines.push(`Outcomes: ${OUTCOME_CLASSES.filter((c) => o.outcomes[c]).map((c) => `${c} ${o.outcomes[c]}`).join(', ') || 'none yet'}${o.masked ? ` (${o.masked} masked: left out of the rates)` : ''}`);
  lines.push(`Tokens:   ${o.tokens.prompt} prompt + ${o.tokens.completion} completion${o.costUsd !== null ? `, $${o.costUsd.toFixed(4)}` : ''}`);
  lines.push(`Time:     ${o.elapsedSec.toFixed(1)} s elapsed, ${o.trialSec.toFixed(1)} s of trials`);
  const causes = results.trials.filter((t) => t.cause && t.outcome !== 'failed').slice(0, 5);
  if (causes.length) lines.push('', 'Not scored / timed out:', ...causes.map((t) => `  ${t.trial}: ${t.outcome}: ${t.cause}`));
  return lines.join('\n');
}

export function formatComparison(c: Comparison): string {
  const width = Math.max(4, ...c.tasks.map((t) => t.task.length));
  const lines: string[] = [];
  c.jobs.forEach((j, i) => lines.push(`[${i + 1}] ${j.label}: pass rate ${pct(j.passRate).trim()} over ${j.scored} scored trials${j.masked ? `, ${j.masked} masked` : ''}`));
  lines.push('');
  lines.push(`${'task'.padEnd(width)}  ${c.jobs.map((_, i) => `[${i + 1}]`.padStart(6)).join(' ')}`);
  for (const t of c.tasks) lines.push(`${t.task.padEnd(width)}  ${t.rates.map((r) => pct(r).padStart(6)).join(' ')}`);
  if (c.differences.length) lines.push('');
  for (const d of c.differences) {
    const iv = d.interval;
    lines.push(`${d.job} − ${d.against}: ${(iv.mean * 100).toFixed(1)} pts over ${d.tasks} tasks, ${Math.round(iv.level * 100)}% CI [${(iv.low * 100).toFixed(1)}, ${(iv.high * 100).toFixed(1)}] (paired bootstrap, ${iv.resamples} resamples, seed ${iv.seed})`);
  }
  if (c.flipped.length) {
    lines.push('', 'Flipped tasks (majority outcome changed):');
    for (const f of c.flipped) lines.push(`  ${f.task}: ${pct(f.from).trim()} → ${pct(f.to).trim()} in ${f.job}`);
  } else if (c.jobs.length > 1) lines.push('', 'No task flipped.');
  return lines.join('\n');
}
