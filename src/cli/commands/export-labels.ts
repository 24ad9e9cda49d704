import { writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { readTrajectory } from '../../core/trajectory/reader';
import { labelsFromTrajectory, labelsToJsonl, type PreferenceLabel } from '../../core/verifier/labels';

export const exportLabelsCommand: CliCommand = {
  name: 'export-labels',
  summary: 'Write pairwise preference labels (human choices + verifier judgements) as JSONL for verifier fine-tuning',
  usage: 'export-labels <trajectory.jsonl | run-dir>... -o labels.jsonl [--human-only]',
  options: {
    out: { type: 'string', short: 'o' },
    'human-only': { type: 'boolean' },
  },
  async run({ positionals, values }) {
    const out = values.out as string | undefined;
    if (positionals.length === 0) throw new UsageError('expected at least one trajectory (e.g. tbrl export-labels runs/*/trajectory.jsonl -o labels.jsonl)');
    if (!out) throw new UsageError('missing -o <file> (e.g. -o labels.jsonl)');
    const all: PreferenceLabel[] = [];
    let human = 0;
    for (const p of positionals) {
      const path = p.endsWith('.jsonl') ? p : `${p.replace(/\/$/, '')}/trajectory.jsonl`;
      const t = await readTrajectory(path);
      for (const w of t.warnings) console.error(`warning: ${w}`);
      const labels = labelsFromTrajectory(t, { humanOnly: values['human-only'] === true });
      human += labels.filter((l) => l.source === 'human').length;
      all.push(...labels);
    }
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, labelsToJsonl(all), 'utf8');
    console.log(`${all.length} labels (${human} from human choices, ${all.length - human} verifier judgements) from ${positionals.length} trajector${positionals.length === 1 ? 'y' : 'ies'} -> ${out}`);
    if (all.length === 0) console.error('No labels: no step has a human choice or a pairwise verifier matrix. Override candidates in the debugger, or run with --verifier pairwise.');
    return 0;
  },
};
