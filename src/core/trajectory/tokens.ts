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
