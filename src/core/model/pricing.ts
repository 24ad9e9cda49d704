import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';

/** USD per million tokens. */
export interface ModelPrice { promptPerMTok: number; completionPerMTok: number }

/**
 * List prices (USD per million prompt / completion tokens) of a few hosted models, as published
 * by their providers; edit or extend them with `.tbrl/prices.json` or TBRL_PRICES (a JSON file),
 * `{"model-name": {"promptPerMTok": 0.15, "completionPerMTok": 0.6}}`. Local models cost nothing.
 */
export const DEFAULT_PRICES: Record<string, ModelPrice> = {
  'gpt-4o': { promptPerMTok: 2.5, completionPerMTok: 10 },
  'gpt-4o-mini': { promptPerMTok: 0.15, completionPerMTok: 0.6 },
  'gpt-4.1': { promptPerMTok: 2, completionPerMTok: 8 },
  'gpt-4.1-mini': { promptPerMTok: 0.4, completionPerMTok: 1.6 },
};

export const LOCAL_PRICE: ModelPrice = { promptPerMTok: 0, completionPerMTok: 0 };

export function loadPriceTable(cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): Record<string, ModelPrice> {
  const table = { ...DEFAULT_PRICES };
  for (const path of [join(cwd, '.tbrl', 'prices.json'), env.TBRL_PRICES].filter((p): p is string => !!p && existsSync(p))) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new TbrlError('prices-invalid', `${path} is not valid JSON: ${errorMessage(err)}`, 'Write e.g. {"my-model": {"promptPerMTok": 0.5, "completionPerMTok": 1.5}}.');
    }
    for (const [model, p] of Object.entries((raw ?? {}) as Record<string, Partial<ModelPrice>>)) {
      if (typeof p?.promptPerMTok !== 'number' || typeof p?.completionPerMTok !== 'number' || p.promptPerMTok < 0 || p.completionPerMTok < 0) {
        throw new TbrlError('prices-invalid', `${path}: the price of "${model}" needs promptPerMTok and completionPerMTok, non-negative numbers.`, `Write e.g. "${model}": {"promptPerMTok": 0.5, "completionPerMTok": 1.5}.`);
      }
      table[model] = { promptPerMTok: p.promptPerMTok, completionPerMTok: p.completionPerMTok };
    }
  }
  return table;
}

/** The price of `model`, zero when it is served locally, undefined when unknown. */
export function priceOf(model: string | undefined, options: { local?: boolean; table?: Record<string, ModelPrice> } = {}): ModelPrice | undefined {
  if (options.local) return LOCAL_PRICE;
  if (!model) return undefined;
  return (options.table ?? DEFAULT_PRICES)[model];
}

export function costUsd(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  return (promptTokens * price.promptPerMTok + completionTokens * price.completionPerMTok) / 1e6;
}

export function formatUsd(usd: number): string {
  return usd === 0 ? '$0 (local)' : usd < 0.01 ? `$${usd.toFixed(5)}` : `$${usd.toFixed(3)}`;
}
