import type { TrajectoryFooter } from '../trajectory/schema';

/**
 * Every trial ends in exactly one outcome class (DESIGN.md, "Around the run"). Only the first three
 * are the agent's doing and carry a reward into pass rates and training; the others are infra
 * failures, masked everywhere (credit, training bundles, eval summaries) and shown with a one-line
 * root cause instead of being scored 0 as if the agent had failed.
 */
export const OUTCOME_CLASSES = [
  'passed',
  'failed',
  'agent_timeout',
  'context_overflow',
  'model_error',
  'verifier_error',
  'environment_error',
] as const;
export type OutcomeClass = (typeof OUTCOME_CLASSES)[number];

/** The classes whose reward is the agent's: used for rates and for training. */
export const SCORED_OUTCOMES: ReadonlySet<OutcomeClass> = new Set(['passed', 'failed', 'agent_timeout']);

export interface TrialOutcome {
  class: OutcomeClass;
  /** One line naming the root cause for every class but `passed` (e.g. "verifier could not resolve host astral.sh: the task needs network or pre-provisioned tools"). */
  cause?: string;
}

export function isMasked(outcome: OutcomeClass | TrialOutcome): boolean {
  return !SCORED_OUTCOMES.has(typeof outcome === 'string' ? outcome : outcome.class);
}

export function isOutcomeClass(value: unknown): value is OutcomeClass {
  return typeof value === 'string' && (OUTCOME_CLASSES as readonly string[]).includes(value);
}

/**
 * The outcome of a finished trajectory: the footer's own `outcome` when the run recorded one; for
 * trajectories written before outcomes existed, derived from the end reason and the reward the way
 * the run would have classified it (a test run that crashed is the verifier's failure, not the agent's).
 */
export function outcomeOf(footer: TrajectoryFooter | undefined): TrialOutcome {
  if (!footer) return { class: 'environment_error', cause: 'the run has no footer: it was cut off before it ended' };
  if (footer.outcome && isOutcomeClass(footer.outcome.class)) return footer.outcome;
  if (footer.endReason === 'error') return { class: 'environment_error', cause: firstLine(footer.endMessage) ?? 'the run ended with an error' };
  const reward = footer.reward;
  if (!reward) return { class: 'environment_error', cause: 'the run ended without a reward' };
  if (reward.tests === undefined && reward.testError) return { class: 'verifier_error', cause: `${reward.testError.kind}: ${firstLine(reward.testError.message) ?? ''}`.trim() };
  const passed = reward.pprs ? reward.pprs.pass : reward.tests === 1;
  if (passed) return { class: 'passed' };
  if (footer.endReason === 'max-time') return { class: 'agent_timeout', cause: firstLine(footer.endMessage) ?? 'the agent ran out of time' };
  return { class: 'failed', cause: reward.testOutcomes?.filter((t) => t.status !== 'passed' && t.status !== 'skipped').map((t) => t.name).slice(0, 3).join(', ') || undefined };
}

function firstLine(text: string | undefined): string | undefined {
  return text?.split('\n').find((l) => l.trim() !== '')?.trim();
}
