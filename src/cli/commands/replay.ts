import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { readTrajectory } from '../../core/trajectory/reader';
import { formatTrajectory, sanitizeForTerminal } from '../../core/trajectory/replay';
import { toAtif, toEpisode } from '../../core/trajectory/export';
import { formatTokens } from '../../core/trajectory/tokens';

export const replayCommand: CliCommand = {
  name: 'replay',
  summary: 'Print the steps of a trajectory readably (pairwise matrices, Φ curve, reward breakdown), or export it (rLLM episode, ATIF)',
  usage: 'replay <trajectory.jsonl | run-dir> [--candidates] [--full] [--tokens] [--format text|episode|atif]\n--tokens: per step the prompt token ids (rebuilt from the deltas, hash-checked) and each candidate\'s token ids, logprobs and finish reason.',
  options: {
    candidates: { type: 'boolean' },
    full: { type: 'boolean' },
    tokens: { type: 'boolean' },
    format: { type: 'string' },
  },
  async run({ positionals, values }) {
    if (positionals.length !== 1) throw new UsageError('expected one trajectory (e.g. tbrl replay runs/hello-world-20260101-000000/trajectory.jsonl)');
    let path = positionals[0];
    if (!path.endsWith('.jsonl')) path = `${path.replace(/\/$/, '')}/trajectory.jsonl`;
    const format = (values.format as string | undefined) ?? 'text';
    if (!['text', 'episode', 'atif'].includes(format)) throw new UsageError(`--format must be text, episode or atif, not "${format}"`);
    const t = await readTrajectory(path);
    if (format === 'episode') console.log(JSON.stringify(toEpisode(t), null, 2));
    else if (format === 'atif') console.log(JSON.stringify(toAtif(t), null, 2));
    else if (values.tokens === true) console.log(formatTokens(t.steps, { full: values.full === true }));
    else console.log(sanitizeForTerminal(formatTrajectory(t, { candidates: values.candidates === true, maxChars: values.full === true ? Infinity : 1500 })));
    for (const w of format === 'text' ? [] : t.warnings) console.error(`warning: ${w}`);
    return 0;
  },
};
