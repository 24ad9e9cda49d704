import { ModelClient, type ModelClientOptions } from '../model/client';
import { CHARS_PER_TOKEN, estimateMessagesTokens } from '../model/context';
import { settleLimit } from '../model/concurrency';
import type { VerifierDecisionRecord } from '../trajectory/schema';
import { errorMessage } from '../errors';
import { lastTurnOf, prefilter, type Prefiltered } from './candidates';
import { parseTurn } from '../actions/parser';
import { canonicalActionKey, turnParses } from './parses';
import { renderPrompt } from './prompts';
import { renderHistory, label } from './render';
import { argmax, topMargin } from './ranking';
import { cheaperModes, verifierMode, type Verdict, type VerifierCall } from './modes';
import type { VerifierConfig, VerifierInput, VerifierMode, VerifierRunStats } from './types';

const DEFAULTS = { concurrency: 32, maxOutputTokens: 512, historyChars: 24_000 };
/** Score of candidates ranked last without a call (unparseable, or a repeat of a failed action). */
export const DEMOTED_SCORE = -1;

interface CallOutcome { text?: string; error?: string; promptTokens: number; outputTokens: number; retried?: boolean }

/**
 * The Mid-Harness verifier: given N candidate turns for the same history, pick one. Never throws
 * for verifier-side trouble (endpoint down, nonsense answers, budget spent): it falls back to the
 * first parseable candidate and says so in the decision record.
 */
export class MidHarnessVerifier {
  readonly stats: VerifierRunStats = { steps: 0, calls: 0, failedCalls: 0, promptTokens: 0, outputTokens: 0, parallelOutputTokens: 0, fallbacks: 0, degradedSteps: 0 };
  private readonly client: ModelClient;
  private readonly log?: (line: string) => void;
  private lastMode?: string;

  constructor(readonly config: VerifierConfig, options: ModelClientOptions & { client?: ModelClient } = {}) {
    this.log = options.log;
    this.client = options.client ?? new ModelClient({ temperature: 0, ...config.endpoint }, options);
  }

  get spentTokens(): number {
    return this.stats.promptTokens + this.stats.outputTokens;
  }

  async select(input: VerifierInput): Promise<VerifierDecisionRecord> {
    this.stats.steps++;
    try {
      return await this.decide(input);
    } catch (err) {
      if (input.signal?.aborted) throw err;
      // A defect or a missing prompt file must cost one verifier decision, not the run.
      this.stats.fallbacks++;
      const first = Math.max(0, (input.parsed ?? input.candidates.map((t) => parseTurn(t))).findIndex(turnParses));
      return { mode: this.config.mode, chosen: first, scores: input.candidates.map(() => 0), calls: 0, outputTokens: 0, parallelOutputTokens: 0,
        fallback: `verifier error (${errorMessage(err).split('\n')[0]}): took candidate ${first}, the first parseable one` };
    }
  }

  private async decide(input: VerifierInput): Promise<VerifierDecisionRecord> {
    const n = input.candidates.length;
    const parsed = input.parsed ?? input.candidates.map((t) => parseTurn(t));
    const parses = parsed.map(turnParses);
    // Keys come from the parses already made; only a text that is no candidate (the previous turn) is parsed here.
    const parsedByText = new Map(input.candidates.map((t, i) => [t, parsed[i]]));
    const keyOf = (text: string) => canonicalActionKey(text, parsedByText.get(text));
    const pre = prefilter(input.candidates, parses, lastTurnOf(input.messages, input.lastTurnFailed), keyOf);
    const firstChoice = pre.viable[0] ?? parses.findIndex((p) => p);
    const fallbackIndex = firstChoice >= 0 ? firstChoice : 0;
    const base = { calls: 0, outputTokens: 0, parallelOutputTokens: 0 };

    if (pre.viable.length <= 1) {
      // Nothing to compare: no call is worth its cost.
      const scores = this.fillScores(n, pre, new Map(pre.viable.map((i) => [i, 1])));
      const rec: VerifierDecisionRecord = { mode: this.config.mode, chosen: fallbackIndex, scores, ...base };
      if (pre.viable.length === 0) {
        this.stats.fallbacks++;
        rec.fallback = `no viable candidate (${[...pre.demoted.values()].join(', ') || 'none sampled'}): took candidate ${fallbackIndex}`;
      }
      return rec;
    }

    const { instruction: firstUser, history } = renderHistory(input.messages, this.historyChars());
    const instruction = input.instruction ?? firstUser;
    const plan = this.affordableMode(pre.viable, instruction, history, input.candidates);
    const degradedFrom = plan.mode !== this.config.mode ? this.config.mode : undefined;
    if (degradedFrom) this.stats.degradedSteps++;
    if (degradedFrom && plan.mode !== this.lastMode) {
      this.log?.(`verifier token budget: ${this.spentTokens} of ${this.config.tokenBudget} spent, ${degradedFrom} → ${plan.mode === 'none' ? 'first parseable candidate (no verifier calls)' : plan.mode}`);
    }
    this.lastMode = plan.mode;
    if (plan.mode === 'none') {
      return { mode: 'none', chosen: fallbackIndex, scores: this.fillScores(n, pre, new Map()), ...base, degradedFrom,
        fallback: `verifier token budget spent (${this.spentTokens} of ${this.config.tokenBudget}): took the first parseable candidate` };
    }

    const labels = pre.viable.map((_, k) => label(k));
    const mode = verifierMode(plan.mode);
    const outcomes = await settleLimit(plan.calls, this.config.concurrency ?? DEFAULTS.concurrency, (c) => this.run(c, input.signal, (text) => mode.usable(text, labels)));
    if (input.signal?.aborted) throw input.signal.reason ?? new Error('aborted');
    const results: CallOutcome[] = outcomes.map((o) => (o.ok ? o.value : { error: errorMessage(o.error), promptTokens: 0, outputTokens: 0 }));
    const retries = results.filter((r) => r.retried).length;
    const cost = {
      calls: plan.calls.length + retries,
      ...(retries ? { retries } : {}),
      outputTokens: results.reduce((a, r) => a + r.outputTokens, 0),
      // All calls of a mode are independent, so wall time follows the longest single answer.
      parallelOutputTokens: results.reduce((a, r) => Math.max(a, r.outputTokens), 0),
    };
    this.stats.calls += cost.calls;
    this.stats.failedCalls += results.filter((r) => r.error !== undefined).length;
    this.stats.promptTokens += results.reduce((a, r) => a + r.promptTokens, 0);
    this.stats.outputTokens += cost.outputTokens;
    this.stats.parallelOutputTokens += cost.parallelOutputTokens;

    const verdict = this.interpret(plan.mode, plan.calls, results, pre.viable, n);
    if ('failure' in verdict) {
      this.stats.fallbacks++;
      return { mode: plan.mode, chosen: fallbackIndex, scores: this.fillScores(n, pre, new Map()), ...cost, degradedFrom,
        fallback: `${verdict.failure}${retries ? ' (each unusable answer was asked again once)' : ''}: took candidate ${fallbackIndex}, the first parseable one` };
    }
    const scores = this.fillScores(n, pre, verdict.scores);
    const chosen = argmax(scores, pre.viable) ?? fallbackIndex;
    return { mode: plan.mode, chosen, scores, margin: topMargin(scores, pre.viable), matrix: verdict.matrix, ...cost, degradedFrom };
  }

  /** History shown to the verifier: configured size, and at most half the verifier's context window. */
  private historyChars(): number {
    const configured = this.config.historyChars ?? DEFAULTS.historyChars;
    const ctx = this.config.endpoint.contextTokens;
    return ctx ? Math.min(configured, Math.floor(ctx * CHARS_PER_TOKEN * 0.5)) : configured;
  }

  /** The configured mode if its estimated cost fits the remaining budget, else the next cheaper one that does. */
  private affordableMode(viable: number[], instruction: string, history: string, texts: string[]): { mode: VerifierMode | 'none'; calls: VerifierCall[] } {
    const budget = this.config.tokenBudget;
    for (const mode of [this.config.mode, ...cheaperModes(this.config.mode)]) {
      const calls = this.planCalls(mode, viable, instruction, history, texts);
      if (budget === undefined) return { mode, calls };
      const estimate = calls.reduce((a, c) => a + estimateMessagesTokens(c.messages) + c.maxTokens, 0);
      if (this.spentTokens + estimate <= budget) return { mode, calls };
    }
    return { mode: 'none', calls: [] };
  }

  private planCalls(mode: VerifierMode, viable: number[], instruction: string, history: string, texts: string[]): VerifierCall[] {
    const def = verifierMode(mode);
    const version = this.config.promptVersion;
    return def.plan({
      viable, texts, instruction, history,
      labels: viable.map((_, k) => label(k)),
      maxOutputTokens: this.config.maxOutputTokens ?? DEFAULTS.maxOutputTokens,
      prompt: (vars) => renderPrompt(def.prompt, vars, version),
    });
  }

  /**
   * One verifier call. Small models often answer without the line the mode needs; such an answer
   * is asked for again once (a fresh sample), and only then does the step fall back.
   */
  private async run(call: VerifierCall, signal?: AbortSignal, usable?: (text: string) => boolean): Promise<CallOutcome> {
    const r = await this.client.sample(call.messages, 1, { maxTokens: call.maxTokens, signal });
    const text = r.completions[0]?.text ?? '';
    if (!usable || usable(text)) return { text, promptTokens: r.usage.promptTokens, outputTokens: r.usage.completionTokens };
    const again = await this.client.sample(call.messages, 1, { maxTokens: call.maxTokens, signal });
    return {
      text: again.completions[0]?.text ?? '',
      promptTokens: r.usage.promptTokens + again.usage.promptTokens,
      outputTokens: r.usage.completionTokens + again.usage.completionTokens,
      retried: true,
    };
  }

  private interpret(mode: VerifierMode, calls: VerifierCall[], results: CallOutcome[], viable: number[], n: number): Verdict {
    const firstError = results.find((r) => r.error !== undefined)?.error;
    const failed = results.filter((r) => r.error !== undefined).length;
    const failure = (what: string) => ({ failure: failed === results.length && firstError ? `verifier call failed (${firstError.split('\n')[0]})` : what });
    return verifierMode(mode).interpret({ calls, answers: results.map((r) => r.text), viable, labels: viable.map((_, k) => label(k)), n, failure });
  }

  /** Scores for all N: verdicts for the compared, copies for duplicates, DEMOTED_SCORE for the pre-filtered. */
  private fillScores(n: number, pre: Prefiltered, verdict: Map<number, number>): number[] {
    return Array.from({ length: n }, (_, i) => {
      if (pre.demoted.has(i)) return DEMOTED_SCORE;
      const rep = pre.duplicateOf.get(i) ?? i;
      return verdict.get(rep) ?? 0;
    });
  }
}
