import { UsageError } from '../command';
import { decontaminate, loadPrompts } from '../../core/synth/decontam';

/** `tbrl synth decontam CORPUS --against TASKS [--json]`: exit 1 when any pair shares a 13-gram. */
export async function runDecontam(positionals: string[], values: Record<string, unknown>): Promise<number> {
  const against = values.against as string | undefined;
  if (positionals.length !== 1 || !against) throw new UsageError('usage: tbrl synth decontam CORPUS --against TASKS [--json], e.g. `tbrl synth decontam tasks/tev --against ~/terminal-bench/tasks`.');
  const corpus = await loadPrompts(positionals[0]);
  const bench = await loadPrompts(against);
  for (const p of [...corpus.problems, ...bench.problems]) console.error(`skipped: ${p}`);
  if (corpus.docs.length === 0) throw new UsageError(`no task (task.yaml or task.toml) found under ${positionals[0]}.`);
  if (bench.docs.length === 0) throw new UsageError(`no task (task.yaml or task.toml) found under ${against}.`);
  const r = decontaminate(corpus.docs, bench.docs);
  if (values.json === true) {
    console.log(JSON.stringify(r, null, 2));
    return r.flagged.length > 0 ? 1 : 0;
  }
  const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
  console.log(`corpus ${r.corpusTasks} prompt(s) against ${r.benchmarkTasks} benchmark instruction(s)`);
  console.log(`13-gram overlap: ${pct(r.overlap13)} of prompts (${pct(r.gramRate13)} of 13-grams)`);
  console.log(` 8-gram overlap: ${pct(r.overlap8)} of prompts (${pct(r.gramRate8)} of 8-grams)`);
  console.log(`nearest-prompt Jaccard: min ${r.jaccard.min}, median ${r.jaccard.median}, p95 ${r.jaccard.p95}, max ${r.jaccard.max} (mean ${r.jaccard.mean})`);
  console.log(`  histogram [0,0.1) … [0.9,1]: ${r.jaccard.histogram.join(' ')}`);
  if (r.flagged.length === 0) console.log('no pair shares a 13-gram: not contaminated');
  else {
    console.log(`CONTAMINATED: ${r.flagged.length} pair(s) share 13-grams`);
    for (const p of r.flagged.slice(0, 20)) console.log(`  ${p.corpus} ~ ${p.benchmark}: ${p.shared13} shared 13-gram(s), ${p.shared8} 8-gram(s), Jaccard ${p.jaccard}; e.g. "${p.example}"`);
  }
  return r.flagged.length > 0 ? 1 : 0;
}
