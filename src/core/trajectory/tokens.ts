import { createHash } from 'node:crypto';
import { TbrlError } from '../errors';
import type { PromptTokensRecord, StepRecord } from './schema';

export function tokenIdsHash(ids: readonly number[]): string {
  return createHash('sha256').update(ids.join(',')).digest('hex');
}

/** A turn's prompt ids as the delta from the previous turn's (the conversation grows at the end). */
export function promptDelta(previous: readonly number[] | undefined, current: readonly number[]): PromptTokensRecord {
  let keep = 0;
  if (previous) {
    const n = Math.min(previous.length, current.length);
    while (keep < n && previous[keep] === current[keep]) keep++;
  }
  return { tokens: current.length, keep, append: current.slice(keep), sha256: tokenIdsHash(current) };
}

/**
 * The exact prompt token ids of every step (undefined where the step has none), rebuilt from the
 * deltas and checked against each step's hash. A step without ids breaks the chain: the next
 * step's delta then starts from an empty prompt (its `keep` is 0 in that case).
 */
export function promptTokenIds(steps: readonly StepRecord[]): Array<number[] | undefined> {
  const out: Array<number[] | undefined> = [];
  let previous: number[] = [];
  for (const s of steps) {
    if (!s.prompt) {
      out.push(undefined);
      previous = [];
      continue;
    }
    if (s.prompt.keep > previous.length) {
      throw new TbrlError('trajectory-tokens', `Step ${s.index} keeps ${s.prompt.keep} prompt tokens of the previous step, which has ${previous.length}.`, 'The trajectory was edited or its steps are out of order; token-level training data cannot be rebuilt from it.');
    }
    const ids = previous.slice(0, s.prompt.keep).concat(s.prompt.append);
    if (ids.length !== s.prompt.tokens || tokenIdsHash(ids) !== s.prompt.sha256) {
      throw new TbrlError('trajectory-tokens', `Step ${s.index}: the rebuilt prompt (${ids.length} tokens) does not match the recorded hash.`, 'The trajectory was edited or damaged; re-run the task to get exact token ids.');
    }
    out.push(ids);
    previous = ids;
  }
  return out;
}

/** `tbrl replay --tokens`: per step the prompt ids (rebuilt, hash-checked) and each candidate's ids and logprobs. */
export function formatTokens(steps: readonly StepRecord[], options: { full?: boolean } = {}): string {
  const cap = (xs: readonly (number | string)[]) => (options.full || xs.length <= 24 ? xs.join(' ') : `${xs.slice(0, 12).join(' ')} … ${xs.slice(-8).join(' ')} (${xs.length})`);
  let prompts: Array<number[] | undefined>;
  let chainError: string | undefined;
  try {
    prompts = promptTokenIds(steps);
  } catch (err) {
    prompts = [];
    chainError = (err as Error).message;
  }
  const lines: string[] = [];
  if (chainError) lines.push(`prompt token ids cannot be rebuilt: ${chainError}`);
  for (const [k, s] of steps.entries()) {
    lines.push(`── step ${s.index}`);
    if (s.prompt) {
      lines.push(`  prompt: ${s.prompt.tokens} tokens (kept ${s.prompt.keep} of the previous, ${s.prompt.append.length} new${s.elided?.length ? `; messages ${s.elided.join(', ')} elided` : ''}), sha256 ${s.prompt.sha256.slice(0, 16)}${prompts[k] ? ' ✓' : ''}`);
      lines.push(`    new ids: ${cap(s.prompt.append)}`);
    } else {
      lines.push('  prompt: no token ids (the server did not return them)');
    }
    s.candidates.forEach((c, i) => {
      const mark = (s.decision?.chosen ?? 0) === i ? '*' : ' ';
      const sum = c.logprobs ? c.logprobs.reduce((a, x) => a + x, 0) : c.logprobSum;
      lines.push(`  ${mark}candidate ${i}: ${c.tokenIds ? `${c.tokenIds.length} tokens` : 'no token ids'}, finish ${c.finishReason ?? '?'}${sum !== undefined ? `, logprob sum ${sum.toFixed(3)}` : ''}`);
      if (c.tokenIds) lines.push(`      ids: ${cap(c.tokenIds)}`);
      if (c.logprobs) lines.push(`      logprobs: ${cap(c.logprobs.map((x) => x.toFixed(3)))}`);
    });
  }
  return lines.join('\n');
}
