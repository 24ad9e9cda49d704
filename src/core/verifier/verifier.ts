import { ModelClient, type ModelClientOptions } from '../model/client';
import { CHARS_PER_TOKEN, estimateMessagesTokens } from '../model/context';
import { settleLimit } from '../model/concurrency';
import type { ChatMessage } from '../model/types';
import type { VerifierDecisionRecord } from '../trajectory/schema';
import { errorMessage } from '../errors';
import { lastTurnOf, prefilter, type Prefiltered } from './candidates';
import { candidateParses, canonicalActionKey } from './parses';
import { renderPrompt, type PromptKind } from './prompts';
import { renderCandidates, renderHistory, renderOne, label } from './render';
import { parseDecision, parsePairwise, parseRanking, parseScore } from './answers';
import { argmax, topMargin, winMatrix, winRates, type PairJudgement } from './ranking';
import type { VerifierConfig, VerifierInput, VerifierMode, VerifierRunStats } from './types';

const DEFAULTS = { concurrency: 32, maxOutputTokens: 512, historyChars: 24_000, decisionTokens: 3 };
/** Score of candidates ranked last without a call (unparseable, or a repeat of a failed action). */
export const DEMOTED_SCORE = -1;

/** Cheaper modes to step down to when the budget cannot afford the configured one. */
const CHEAPER: Record<VerifierMode, VerifierMode[]> = {
  pairwise: ['listwise', 'decision-only'],
  pointwise: ['listwise', 'decision-only'],
  listwise: ['decision-only'],
  'decision-only': [],
};

interface CallSpec { messages: ChatMessage[]; maxTokens: number; kind: PromptKind; pair?: { i: number; j: number; aIs: 'i' | 'j' }; candidate?: number }
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
      const first = Math.max(0, (input.parses ?? input.candidates.map(candidateParses)).findIndex((p) => p));
      return { mode: this.config.mode, chosen: first, scores: input.candidates.map(() => 0), calls: 0, outputTokens: 0, parallelOutputTokens: 0,
        fallback: `verifier error (${errorMessage(err).split('\n')[0]}): took candidate ${first}, the first parseable one` };
    }
  }

  private async decide(input: VerifierInput): Promise<VerifierDecisionRecord> {
    const n = input.candidates.length;
    const parses = input.parses ?? input.candidates.map(candidateParses);
    const pre = prefilter(input.candidates, parses, lastTurnOf(input.messages, input.lastTurnFailed), canonicalActionKey);
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
    const outcomes = await settleLimit(plan.calls, this.config.concurrency ?? DEFAULTS.concurrency, (c) => this.run(c, input.signal, (text) => answerUsable(c, text, labels)));
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
  private affordableMode(viable: number[], instruction: string, history: string, texts: string[]): { mode: VerifierMode | 'none'; calls: CallSpec[] } {
    const budget = this.config.tokenBudget;
    for (const mode of [this.config.mode, ...CHEAPER[this.config.mode]]) {
      const calls = this.planCalls(mode, viable, instruction, history, texts);
      if (budget === undefined) return { mode, calls };
      const estimate = calls.reduce((a, c) => a + estimateMessagesTokens(c.messages) + c.maxTokens, 0);
      if (this.spentTokens + estimate <= budget) return { mode, calls };
    }
    return { mode: 'none', calls: [] };
  }

  private planCalls(mode: VerifierMode, viable: number[], instruction: string, history: string, texts: string[]): CallSpec[] {
    const v = this.config.promptVersion;
    const maxOut = this.config.maxOutputTokens ?? DEFAULTS.maxOutputTokens;
    const common = { instruction, history };
    const labels = viable.map((_, k) => label(k)).join(', ');
    switch (mode) {
      case 'listwise':
        return [{ kind: 'listwise', maxTokens: maxOut, messages: renderPrompt('listwise', { ...common, labels, candidates: renderCandidates(viable.map((i) => texts[i])) }, v) }];
      case 'decision-only':
        return [{ kind: 'decision', maxTokens: DEFAULTS.decisionTokens, messages: renderPrompt('decision', { ...common, labels, candidates: renderCandidates(viable.map((i) => texts[i])) }, v) }];
      case 'pointwise':
        return viable.map((i) => ({ kind: 'pointwise' as const, maxTokens: maxOut, candidate: i, messages: renderPrompt('pointwise', { ...common, candidate: renderOne(texts[i]) }, v) }));
      case 'pairwise': {
        const calls: CallSpec[] = [];
        for (let p = 0; p < viable.length; p++) {
          for (let q = p + 1; q < viable.length; q++) {
            const [i, j] = [viable[p], viable[q]];
            // Alternate which side goes first so a verifier's position bias does not favour early samples.
            const aIs = (p + q) % 2 === 0 ? 'i' : 'j';
            const [a, b] = aIs === 'i' ? [texts[i], texts[j]] : [texts[j], texts[i]];
            calls.push({ kind: 'pairwise', maxTokens: maxOut, pair: { i, j, aIs }, messages: renderPrompt('pairwise', { ...common, a: renderOne(a), b: renderOne(b) }, v) });
          }
        }
        return calls;
      }
    }
  }

  /**
   * One verifier call. Small models often answer without the line the mode needs; such an answer
   * is asked for again once (a fresh sample), and only then does the step fall back.
   */
  private async run(call: CallSpec, signal?: AbortSignal, usable?: (text: string) => boolean): Promise<CallOutcome> {
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

  private interpret(mode: VerifierMode, calls: CallSpec[], results: CallOutcome[], viable: number[], n: number):
    { scores: Map<number, number>; matrix?: number[][] } | { failure: string } {
    const labels = viable.map((_, k) => label(k));
    const firstError = results.find((r) => r.error !== undefined)?.error;
    const failed = results.filter((r) => r.error !== undefined).length;
    const why = (what: string) => (failed === results.length && firstError ? `verifier call failed (${firstError.split('\n')[0]})` : what);
    switch (mode) {
      case 'listwise': {
        const order = results[0].text !== undefined ? parseRanking(results[0].text, labels) : undefined;
        if (!order) return { failure: why(`listwise answer had no usable RANKING line (${snippet(results[0].text)})`) };
        const k = order.length;
        return { scores: new Map(order.map((l, r) => [viable[labels.indexOf(l)], k === 1 ? 1 : (k - 1 - r) / (k - 1)])) };
      }
      case 'decision-only': {
        const pick = results[0].text !== undefined ? parseDecision(results[0].text, labels) : undefined;
        if (!pick) return { failure: why(`decision-only answer named no candidate (${snippet(results[0].text)})`) };
        return { scores: new Map(viable.map((i, k) => [i, labels[k] === pick ? 1 : 0])) };
      }
      case 'pointwise': {
        const scores = new Map<number, number>();
        calls.forEach((c, k) => {
          const s = results[k].text !== undefined ? parseScore(results[k].text!) : undefined;
          if (s !== undefined) scores.set(c.candidate!, s / 10);
        });
        if (scores.size === 0) return { failure: why(`no pointwise answer had a usable SCORE line (${snippet(results[0].text)})`) };
        // An unscored candidate must not beat a scored one: it gets the floor of the scale.
        for (const i of viable) if (!scores.has(i)) scores.set(i, 0);
        return { scores };
      }
      case 'pairwise': {
        const judgements: PairJudgement[] = [];
        calls.forEach((c, k) => {
          const a = results[k].text !== undefined ? parsePairwise(results[k].text!) : undefined;
          if (!a) return;
          const { i, j, aIs } = c.pair!;
          const winner = a.winner === 'tie' ? 'tie' : (a.winner === 'A') === (aIs === 'i') ? 'i' : 'j';
          judgements.push({ i, j, winner, margin: a.margin });
        });
        if (judgements.length === 0) return { failure: why(`no pairwise answer had a usable WINNER line (${snippet(results[0].text)})`) };
        const matrix = winMatrix(n, judgements);
        const rates = winRates(matrix, judgements);
        return { scores: new Map(viable.map((i) => [i, rates[i] ?? 0])), matrix };
      }
    }
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

function snippet(text: string | undefined): string {
  if (text === undefined) return 'no answer';
  const t = text.trim().replace(/\s+/g, ' ');
  return JSON.stringify(t.length > 80 ? `…${t.slice(-80)}` : t);
}

/** Whether a verifier answer has what its mode reads (the same parsers `interpret` uses). */
function answerUsable(call: CallSpec, text: string, labels: string[]): boolean {
  switch (call.kind) {
    case 'listwise': return parseRanking(text, labels) !== undefined;
    case 'decision': return parseDecision(text, labels) !== undefined;
    case 'pointwise': return parseScore(text) !== undefined;
    case 'pairwise': return parsePairwise(text) !== undefined;
  }
  return true;
}
