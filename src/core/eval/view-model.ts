import { OUTCOME_CLASSES, isMasked, type OutcomeClass } from '../run/outcome';
import type { JobResults, TrialRecord } from './job';

/**
 * Pure view model of the editor's Eval Jobs tree. The comparison webview's matrix (built by the
 * host, sorted and filtered in the page) is webview/eval-compare/matrix.ts, since webview code
 * imports nothing but types from core.
 */

/** One row of the Eval Jobs tree. */
export interface JobSummaryView {
  dir: string;
  name: string;
  passAt1: number | null;
  done: number;
  total: number;
  complete: boolean;
  outcomes: Partial<Record<OutcomeClass, number>>;
  /** Trials whose directory exists without a trial.json while the job's process runs. */
  running: number;
}

export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined ? '–' : `${(x * 100).toFixed(digits)}%`;
}

/** `passed 3 · failed 1`, in the canonical class order; empty when no trial is done. */
export function outcomeCounts(outcomes: Partial<Record<OutcomeClass, number>>): string {
  return OUTCOME_CLASSES.filter((c) => outcomes[c]).map((c) => `${c} ${outcomes[c]}`).join(' · ');
}

export function summariseJob(dir: string, name: string, results: JobResults, running = 0): JobSummaryView {
  const outcomes: Partial<Record<OutcomeClass, number>> = {};
  for (const c of OUTCOME_CLASSES) if (results.overall.outcomes[c]) outcomes[c] = results.overall.outcomes[c];
  return { dir, name, passAt1: results.overall.passAt1, done: results.overall.trials, total: results.expectedTrials, complete: results.complete, outcomes, running };
}

/** The tree row's description: `pass@1 66.7% · 5/6 · passed 4 · failed 1 · 1 running`. */
export function jobDescription(j: JobSummaryView): string {
  const counts = outcomeCounts(j.outcomes);
  return [`pass@1 ${pct(j.passAt1)}`, `${j.done}/${j.total}`, counts, j.running ? `${j.running} running` : ''].filter(Boolean).join(' · ');
}

/** Per task of one job: `2/3 passed` over its scored trials, with masked ones counted apart. */
export function taskDescription(t: { passed: number; scored: number; masked: number; trials: number }, attempts: number): string {
  return [`${pct(t.scored ? t.passed / t.scored : null, 0)}`, `${t.passed}/${t.scored} passed`, t.trials < attempts ? `${t.trials}/${attempts} done` : '', t.masked ? `${t.masked} masked` : ''].filter(Boolean).join(' · ');
}

export function trialDescription(r: Pick<TrialRecord, 'outcome' | 'reward' | 'wallSec' | 'retries'>): string {
  return [r.outcome.class, r.reward !== undefined ? `reward ${r.reward.toFixed(3)}` : '', `${r.wallSec.toFixed(1)} s`, r.retries ? `${r.retries} retried` : '', isMasked(r.outcome) ? 'masked' : ''].filter(Boolean).join(' · ');
}
