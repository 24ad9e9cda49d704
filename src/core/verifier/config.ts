import { TbrlError } from '../errors';
import type { ModelConfig } from '../model/types';
import { findVerifierMode, VERIFIER_MODES } from './modes';
import type { VerifierConfig, VerifierMode } from './types';

export function parseVerifierMode(value: string): VerifierMode {
  const mode = findVerifierMode(value);
  if (mode) return mode;
  throw new TbrlError('verifier-config', `Unknown verifier mode "${value}".`, `Use one of ${VERIFIER_MODES.join(', ')} (e.g. --verifier pairwise).`);
}

export interface VerifierSettings {
  mode: string;
  baseUrl?: string;
  model?: string;
  apiKey?: string;
  tokenBudget?: number;
}

/**
 * The verifier's endpoint defaults to the generator's (same server, same model: the paper's
 * self-verification setting); TBRL_VERIFIER_BASE_URL / _MODEL / _API_KEY or explicit settings
 * point it elsewhere. A separate URL without a separate key does not inherit the generator's key,
 * so a key is never sent to a server it was not meant for.
 */
export function verifierConfigFrom(settings: VerifierSettings, generator: ModelConfig, env: NodeJS.ProcessEnv = process.env): VerifierConfig {
  const mode = parseVerifierMode(settings.mode);
  const baseUrl = settings.baseUrl ?? env.TBRL_VERIFIER_BASE_URL ?? generator.baseUrl;
  const sameServer = baseUrl === generator.baseUrl;
  const apiKey = settings.apiKey ?? env.TBRL_VERIFIER_API_KEY ?? (sameServer ? generator.apiKey : undefined);
  const budget = settings.tokenBudget ?? (env.TBRL_VERIFIER_TOKEN_BUDGET ? Number(env.TBRL_VERIFIER_TOKEN_BUDGET) : undefined);
  if (budget !== undefined && (!Number.isFinite(budget) || budget <= 0)) {
    throw new TbrlError('verifier-config', `Verifier token budget must be a positive number, not "${String(budget)}".`, 'e.g. TBRL_VERIFIER_TOKEN_BUDGET=200000');
  }
  return {
    mode,
    endpoint: {
      baseUrl,
      model: settings.model ?? env.TBRL_VERIFIER_MODEL ?? generator.model,
      apiKey,
      contextTokens: sameServer ? generator.contextTokens : undefined,
      timeoutMs: generator.timeoutMs,
    },
    tokenBudget: budget,
  };
}
