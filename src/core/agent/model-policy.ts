import type { Policy, PolicyContext, PolicyTurn } from './policy';
import type { CandidateRecord } from '../trajectory/schema';
import { ModelClient, type ModelClientOptions } from '../model/client';
import type { ModelConfig } from '../model/types';
import { MidHarnessVerifier } from '../verifier/verifier';
import { turnParses } from '../verifier/parses';
import type { VerifierConfig } from '../verifier/types';
import { promptDelta } from '../trajectory/tokens';
import { costUsd, type ModelPrice } from '../model/pricing';
import { parseAgentTurn } from './turn';

export interface ModelPolicyOptions extends ModelClientOptions {
  /** Candidates sampled per step (default 1). */
  n?: number;
  /** With N > 1: a verifier (or its config) picks the candidate to execute (Mid-Harness). */
  verifier?: VerifierConfig | MidHarnessVerifier;
  /** Reuse a client (tests, or sharing the learned "server ignores n" state). */
  client?: ModelClient;
  /** USD per million tokens; each step then records its cost (verifier output tokens at the completion price). */
  price?: ModelPrice;
}

/**
 * The model as a policy. N = 1 is the plain agent. N > 1 samples N turns from the same history;
 * with a verifier it picks one (the rest stay in the trajectory), without one it takes the first
 * that parses.
 */
export function createModelPolicy(config: ModelConfig, options: ModelPolicyOptions = {}): Policy & { verifier?: MidHarnessVerifier; client: ModelClient } {
  const n = options.n ?? 1;
  const client = options.client ?? new ModelClient(config, options);
  const verifier = options.verifier instanceof MidHarnessVerifier ? options.verifier
    : options.verifier && n > 1 ? new MidHarnessVerifier(options.verifier, { log: options.log }) : undefined;
  const description = verifier ? `${config.model} × ${n} + ${verifier.config.mode} verifier (${verifier.config.endpoint.model})` : n > 1 ? `${config.model} × ${n}` : config.model;

  // The previous turn's prompt ids: each step stores only what changed (see trajectory/tokens.ts).
  let previousPrompt: number[] | undefined;
  return {
    kind: 'model',
    description,
    verifier,
    client,
    async next(ctx: PolicyContext): Promise<PolicyTurn> {
      const sample = await client.sample(ctx.messages, n, { signal: ctx.signal });
      // Each candidate is parsed here once; the verifier and the loop read these parses.
      const parsed = sample.completions.map((c) => parseAgentTurn(c.text));
      const candidates: CandidateRecord[] = sample.completions.map((c, i) => ({
        text: c.text,
        completionTokens: c.completionTokens,
        logprobSum: c.logprobSum,
        ...(c.tokenIds ? { tokenIds: c.tokenIds } : {}),
        ...(c.logprobs ? { logprobs: c.logprobs } : {}),
        ...(c.finishReason ? { finishReason: c.finishReason } : {}),
        parses: turnParses(parsed[i]),
      }));
      const usage = { ...sample.usage, latencyMs: sample.latencyMs };
      const prompt = sample.promptTokenIds ? promptDelta(previousPrompt, sample.promptTokenIds) : undefined;
      previousPrompt = sample.promptTokenIds;
      const base = { candidates, parsed, usage, elided: sample.elided, ...(prompt ? { prompt } : {}) };
      const priced = (verifierOutputTokens: number) => (options.price ? { costUsd: costUsd(options.price, usage.promptTokens, usage.completionTokens + verifierOutputTokens) } : {});
      if (candidates.length === 1) return { ...base, chosen: 0, ...priced(0) };
      if (!verifier) {
        const first = candidates.findIndex((c) => c.parses);
        const chosen = Math.max(0, first);
        return {
          ...base, chosen, ...priced(0),
          decision: { mode: 'none', chosen, scores: candidates.map((c) => (c.parses ? 1 : -1)), calls: 0, outputTokens: 0, parallelOutputTokens: 0 },
        };
      }
      const decision = await verifier.select({
        instruction: ctx.task.instruction,
        messages: ctx.messages,
        candidates: candidates.map((c) => c.text),
        parsed,
        signal: ctx.signal,
      });
      return { ...base, chosen: decision.chosen, decision, ...priced(decision.outputTokens) };
    },
  };
}
