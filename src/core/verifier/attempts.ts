import { readTrajectory, type Trajectory } from '../trajectory/reader';
import { actionSummary } from '../trajectory/replay';
import { ModelClient } from '../model/client';
import type { ModelConfig } from '../model/types';
import { TbrlError, errorMessage } from '../errors';
import { renderPrompt } from './prompts';
import { clip, label } from './render';
import { parseRanking } from './modes/listwise';

/**
 * Trajectory-level combinations on top of the step-level verifier:
 * - best-of-T: T independent attempts, keep the best (by reward, or by a verifier reading summaries
 *   when rewards are unknown or tied);
 * - sequential refine: attempt k+1 is told what attempt k did and how it ended, and the loop stops
 *   as soon as an attempt reaches the target reward.
 * The run itself is a callback so the CLI (`tbrl run --attempts T --select best|refine`) and tests
 * can drive it alike.
 */
export interface AttemptResult { trajectoryPath: string; reward: number | undefined }
export type RunOnce = (attempt: number, previousSummary?: string) => Promise<AttemptResult>;

export interface AttemptsOptions {
  attempts: number;
  select: 'best' | 'refine';
  /** Refine stops once an attempt reaches this reward (default 1). */
  targetReward?: number;
  /** Best-of-T picks by reward; with a verifier it breaks ties and decides when rewards are missing. */
  verifier?: ModelConfig;
  /** Summary of one attempt for the next one (refine) and for the verifier; default reads the trajectory. */
  summarize?: (result: AttemptResult) => Promise<string>;
  log?: (line: string) => void;
}

export interface AttemptRecord extends AttemptResult { attempt: number; error?: string }

export interface AttemptsOutcome {
  attempts: AttemptRecord[];
  /** Index into `attempts` of the selected one. */
  selected: number;
  /** How it was chosen, in words, for the run summary. */
  reason: string;
}

export async function runAttempts(runOnce: RunOnce, options: AttemptsOptions): Promise<AttemptsOutcome> {
  const t = options.attempts;
  if (!Number.isInteger(t) || t < 1) throw new TbrlError('attempts-config', `--attempts must be a whole number ≥ 1, not ${t}.`, 'e.g. tbrl run examples/hello-world --attempts 3 --select best');
  if (options.select !== 'best' && options.select !== 'refine') throw new TbrlError('attempts-config', `--select must be best or refine, not "${String(options.select)}".`, 'e.g. --select refine');
  const summarize = options.summarize ?? defaultSummary;
  const records: AttemptRecord[] = [];
  let previous: string | undefined;

  for (let k = 1; k <= t; k++) {
    let rec: AttemptRecord;
    try {
      rec = { attempt: k, ...(await runOnce(k, options.select === 'refine' ? previous : undefined)) };
    } catch (err) {
      // One failed attempt (container trouble, model outage) must not lose the others.
      rec = { attempt: k, trajectoryPath: '', reward: undefined, error: errorMessage(err) };
    }
    records.push(rec);
    options.log?.(`attempt ${k}/${t}: reward ${rec.reward ?? (rec.error ? `none (${rec.error.split('\n')[0]})` : 'unknown')}`);
    if (options.select === 'refine') {
      if (rec.reward !== undefined && rec.reward >= (options.targetReward ?? 1)) break;
      previous = rec.error ? `Attempt ${k} crashed before finishing: ${rec.error}` : await summarize(rec).catch((e: unknown) => `Attempt ${k}: no summary (${errorMessage(e)})`);
    }
  }
  return choose(records, options, summarize);
}

async function choose(records: AttemptRecord[], options: AttemptsOptions, summarize: (r: AttemptResult) => Promise<string>): Promise<AttemptsOutcome> {
  const usable = records.map((r, i) => ({ r, i })).filter(({ r }) => !r.error);
  if (usable.length === 0) return { attempts: records, selected: records.length - 1, reason: 'every attempt failed' };
  const rewarded = usable.filter(({ r }) => r.reward !== undefined);
  const top = Math.max(...rewarded.map(({ r }) => r.reward as number));
  const best = rewarded.filter(({ r }) => r.reward === top);

  if (options.select === 'refine') {
    // Later attempts had more information: among equals, trust the latest.
    const pick = best.length ? best[best.length - 1] : usable[usable.length - 1];
    return { attempts: records, selected: pick.i, reason: best.length ? `refine: best reward ${top} (latest of ${best.length})` : 'refine: no rewards, kept the last attempt' };
  }
  const contenders = best.length ? best : usable;
  if (contenders.length === 1) return { attempts: records, selected: contenders[0].i, reason: `best-of-${records.length}: highest reward ${top}` };
  if (options.verifier) {
    try {
      const summaries = await Promise.all(contenders.map(({ r }) => summarize(r)));
      const k = await pickByVerifier(options.verifier, await instructionOf(contenders[0].r), summaries);
      return { attempts: records, selected: contenders[k].i, reason: `best-of-${records.length}: verifier chose among ${contenders.length} ${best.length ? `tied at reward ${top}` : 'unrewarded attempts'}` };
    } catch (err) {
      options.log?.(`trajectory verifier failed, keeping the earliest: ${errorMessage(err)}`);
    }
  }
  return { attempts: records, selected: contenders[0].i, reason: `best-of-${records.length}: ${best.length ? `reward ${top}, earliest of ${best.length} tied` : 'no rewards, kept the first'}` };
}

/** One listwise call over attempt summaries; throws when the answer names no attempt. */
export async function pickByVerifier(endpoint: ModelConfig, instruction: string, summaries: string[]): Promise<number> {
  const labels = summaries.map((_, i) => label(i));
  const messages = renderPrompt('trajectory', {
    instruction,
    labels: labels.join(', '),
    candidates: summaries.map((s, i) => `## Attempt ${labels[i]}\n${s}`).join('\n\n'),
  });
  const r = await new ModelClient({ temperature: 0, maxRetries: 1, ...endpoint }).sample(messages, 1, { maxTokens: 512 });
  const order = parseRanking(r.completions[0]?.text ?? '', labels);
  if (!order) throw new TbrlError('verifier-answer', 'The trajectory verifier gave no usable RANKING line.', 'Check the verifier model; the earliest best attempt is kept meanwhile.');
  return labels.indexOf(order[0]);
}

async function instructionOf(r: AttemptResult): Promise<string> {
  try {
    return (await readTrajectory(r.trajectoryPath)).header.task.instruction;
  } catch {
    return '(task statement unavailable)';
  }
}

async function defaultSummary(r: AttemptResult): Promise<string> {
  return summarizeTrajectory(await readTrajectory(r.trajectoryPath));
}

/** What an attempt did and how it ended, compact enough for a prompt. */
export function summarizeTrajectory(t: Trajectory, maxChars = 6000): string {
  const lines: string[] = [];
  for (const s of t.steps) {
    for (const a of s.actions) lines.push(`step ${s.index}: ${actionSummary(a)}`);
    for (const e of s.parseErrors) lines.push(`step ${s.index}: parse error: ${e.split('\n')[0]}`);
  }
  const f = t.footer;
  const end = f ? `Ended: ${f.endReason}${f.endMessage ? ` — ${f.endMessage}` : ''} after ${f.steps} steps.` : 'Ended without a footer (killed or still running).';
  const reward = f?.reward ? ` Reward ${f.reward.total}${f.reward.tests !== undefined ? ` (tests ${f.reward.tests})` : ''}.` : '';
  const failed = f?.reward?.testOutcomes?.filter((o) => o.status !== 'passed').map((o) => o.name) ?? [];
  const tests = failed.length ? ` Failing tests: ${failed.slice(0, 10).join(', ')}.` : '';
  return clip(`${lines.join('\n')}\n${end}${reward}${tests}`, maxChars);
}
