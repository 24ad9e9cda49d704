import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import { defaultModelPath } from '../serve/default-model';

/**
 * Where a run's settings come from, highest precedence first: explicit options (CLI flags),
 * environment (OPENAI_BASE_URL, OPENAI_API_KEY, TBRL_MODEL), then `.tbrl/config.json` in the
 * working directory. With no endpoint anywhere the run serves the cached local default model
 * (`tbrl serve`), or uses the oracle policy when that is not cached either, and says which.
 */
export interface RunConfigInput {
  baseUrl?: string;
  model?: string;
  apiKey?: string;
  n?: number;
  temperature?: number;
  maxTokensPerTurn?: number;
  contextTokens?: number;
  policy?: 'model' | 'oracle';
  /** Mid-Harness verifier mode: a name in the registry of src/core/verifier/modes/, or none. */
  verifier?: string;
  maxSteps?: number;
  maxTimeSec?: number;
  maxTokens?: number;
  /** LLM judge model on the same endpoint; with it the reward is 0.65 × tests + 0.35 × judge. */
  judgeModel?: string;
  /** System prompt version (src/core/prompts/system-<version>.md), e.g. compact-v1: the prompt cpu-tiny trains with. */
  promptVersion?: string;
}

export interface ResolvedRunConfig {
  policy: 'model' | 'oracle';
  /** Why this policy was chosen, shown to the user ("no endpoint configured: using the oracle policy"). */
  policyReason: string;
  model?: {
    baseUrl: string; model: string; apiKey?: string; n: number; temperature?: number; maxTokens?: number; contextTokens?: number;
    /** No endpoint configured: the run starts `tbrl serve` on this cached GGUF and fills in baseUrl and model. */
    local?: { modelPath: string };
  };
  verifier?: string;
  maxSteps: number;
  maxTimeSec?: number;
  maxTokens?: number;
  judge?: { baseUrl: string; model: string; apiKey?: string };
  /** The system prompt version when not the default. */
  promptVersion?: string;
  /** Which sources contributed (for the report). */
  sources: string[];
}

export const CONFIG_FILE = join('.tbrl', 'config.json');
export const DEFAULT_MAX_STEPS = 50;
/**
 * With n > 1 and no verifier named, the cheapest verifier chooses (one call per step, ~1x a plain
 * call): without one the run would sample n candidates and execute the first.
 */
export const DEFAULT_VERIFIER_FOR_N = 'listwise';

/** The verifier a model run uses: the one named, else listwise when n > 1, else none. */
export function defaultVerifier(n: number, named: string | undefined): string | undefined {
  return named ?? (n > 1 ? DEFAULT_VERIFIER_FOR_N : undefined);
}
/** The local default model's turn budget: a 135M model rarely says anything useful past this. */
export const LOCAL_DEFAULTS = { maxTokens: 160, contextTokens: 3_800, temperature: 0.8 };

const FILE_KEYS: Record<string, 'string' | 'number'> = {
  baseUrl: 'string', model: 'string', apiKey: 'string', n: 'number', temperature: 'number', maxTokensPerTurn: 'number',
  contextTokens: 'number', policy: 'string', verifier: 'string', maxSteps: 'number', maxTimeSec: 'number', maxTokens: 'number',
  judgeModel: 'string', promptVersion: 'string',
};

export function readConfigFile(cwd: string): { path: string; values: RunConfigInput } | undefined {
  const path = join(cwd, CONFIG_FILE);
  if (!existsSync(path)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new TbrlError('config-invalid', `${path} is not valid JSON: ${errorMessage(err)}`, 'Fix the file, e.g. {"baseUrl": "http://localhost:8000/v1", "model": "qwen3-8b", "n": 1}.');
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new TbrlError('config-invalid', `${path} must hold a JSON object.`, 'Write e.g. {"baseUrl": "http://localhost:8000/v1", "model": "qwen3-8b"}.');
  }
  const values: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const want = FILE_KEYS[k];
    if (!want) throw new TbrlError('config-invalid', `${path}: unknown key "${k}".`, `Use only: ${Object.keys(FILE_KEYS).join(', ')}.`);
    if (typeof v !== want) throw new TbrlError('config-invalid', `${path}: "${k}" must be a ${want}, not ${JSON.stringify(v)}.`, `Write e.g. "${k}": ${want === 'number' ? '4' : '"value"'}.`);
    values[k] = v;
  }
  return { path, values: values as RunConfigInput };
}

export function resolveRunConfig(options: RunConfigInput, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ResolvedRunConfig {
  const file = readConfigFile(cwd);
  const fromEnv: RunConfigInput = {
    baseUrl: env.OPENAI_BASE_URL || undefined,
    apiKey: env.OPENAI_API_KEY || undefined,
    model: env.TBRL_MODEL || undefined,
    judgeModel: env.TBRL_JUDGE_MODEL || undefined,
    promptVersion: env.TBRL_PROMPT_VERSION || undefined,
  };
  const layers: Array<[string, RunConfigInput]> = [['options', options], ['environment', fromEnv], [file?.path ?? '', file?.values ?? {}]];
  const sources: string[] = [];
  const pick = <K extends keyof RunConfigInput>(key: K): RunConfigInput[K] => {
    for (const [name, layer] of layers) {
      if (layer[key] !== undefined) {
        if (name && !sources.includes(name)) sources.push(name);
        return layer[key];
      }
    }
    return undefined;
  };

  const baseUrl = pick('baseUrl');
  const requested = pick('policy');
  if (requested !== undefined && requested !== 'model' && requested !== 'oracle') {
    throw new TbrlError('config-invalid', `Unknown policy "${requested}".`, 'Use --policy model or --policy oracle.');
  }
  const n = pick('n') ?? 1;
  if (!Number.isInteger(n) || n < 1) throw new TbrlError('config-invalid', `n must be a whole number ≥ 1 (got ${n}).`, 'Use e.g. --n 4.');
  const maxSteps = pick('maxSteps') ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new TbrlError('config-invalid', `max steps must be a whole number ≥ 1 (got ${maxSteps}).`, 'Use e.g. --max-steps 30.');
  const maxTimeSec = pick('maxTimeSec');
  if (maxTimeSec !== undefined && !(maxTimeSec > 0)) throw new TbrlError('config-invalid', `max time must be a positive number of seconds (got ${maxTimeSec}).`, 'Use e.g. --max-time 600.');
  const maxTokens = pick('maxTokens');
  if (maxTokens !== undefined && !(maxTokens > 0)) throw new TbrlError('config-invalid', `max tokens must be positive (got ${maxTokens}).`, 'Use e.g. --max-tokens 200000.');
  const judgeModel = pick('judgeModel');
  if (judgeModel && !baseUrl) {
    throw new TbrlError('config-missing', `A judge model (${judgeModel}) is configured but no endpoint to reach it.`, `Pass --base-url, set OPENAI_BASE_URL, or put "baseUrl" in ${CONFIG_FILE}.`);
  }
  const judge = judgeModel && baseUrl ? { baseUrl, model: judgeModel, apiKey: pick('apiKey') } : undefined;
  const promptVersion = pick('promptVersion');
  if (promptVersion !== undefined && !/^[A-Za-z0-9._-]+$/.test(promptVersion)) throw new TbrlError('config-invalid', `prompt version "${promptVersion}" is not a version name.`, 'Use the part of src/core/prompts/system-<version>.md between "system-" and ".md", e.g. v1 or compact-v1.');
  const common = { verifier: pick('verifier'), maxSteps, maxTimeSec, maxTokens, ...(judge ? { judge } : {}), ...(promptVersion ? { promptVersion } : {}), sources };

  let policy: 'model' | 'oracle';
  let policyReason: string;
  const localModel = defaultModelPath(env);
  const noEndpoint = `no model endpoint configured (--base-url, OPENAI_BASE_URL or ${CONFIG_FILE})`;
  if (requested === 'oracle') {
    policy = 'oracle';
    policyReason = 'oracle policy (requested): runs the task\'s reference solution';
  } else if (baseUrl) {
    policy = 'model';
    policyReason = requested === 'model' ? 'model policy (requested)' : `model policy: endpoint from ${sources.find((s) => s !== 'options') ?? 'options'}`;
  } else if (existsSync(localModel)) {
    // The embedded default: a small local model served by `tbrl serve`, so a run always has a real model.
    const n = pick('n') ?? 1;
    return {
      policy: 'model',
      policyReason: `${noEndpoint}: starting \`tbrl serve\` with the local default model ${localModel} (n=${n}; --policy oracle runs the reference solution instead)`,
      model: {
        baseUrl: '', model: 'local', n, local: { modelPath: localModel },
        temperature: pick('temperature') ?? LOCAL_DEFAULTS.temperature,
        maxTokens: pick('maxTokensPerTurn') ?? LOCAL_DEFAULTS.maxTokens,
        contextTokens: pick('contextTokens') ?? LOCAL_DEFAULTS.contextTokens,
      },
      ...common,
    };
  } else if (requested === 'model') {
    throw new TbrlError('config-missing', `The model policy needs an OpenAI-compatible endpoint, none is configured, and the local default model is not in the cache (${localModel}).`,
      `Run \`bash scripts/fetch-model.sh\` for the local model, or pass --base-url http://localhost:8000/v1, set OPENAI_BASE_URL, or put "baseUrl" in ${CONFIG_FILE}.`);
  } else {
    policy = 'oracle';
    policyReason = `${noEndpoint} and the local default model is not in the cache (${localModel}; \`bash scripts/fetch-model.sh\` fetches it): using the oracle policy, which runs the task's reference solution`;
  }
  if (policy === 'oracle') return { policy, policyReason, ...common };
  if (!baseUrl) throw new TbrlError('config-missing', 'The model policy needs an OpenAI-compatible endpoint, and none is configured.', `Pass --base-url http://localhost:8000/v1, set OPENAI_BASE_URL, or put "baseUrl" in ${CONFIG_FILE}.`);
  const model = pick('model');
  if (!model) {
    throw new TbrlError('config-missing', `An endpoint is configured (${baseUrl}) but no model name.`, `Pass --model NAME, set TBRL_MODEL, or put "model" in ${CONFIG_FILE}.`);
  }
  if (common.verifier === 'none' && n > 1) {
    throw new TbrlError('config-invalid', `n=${n} candidates with verifier "none": every step would sample ${n} candidates and execute only the first.`, `Drop the verifier setting (with n > 1 the ${DEFAULT_VERIFIER_FOR_N} verifier chooses), name one (e.g. --verifier pairwise), or sample one candidate (--n 1).`);
  }
  const verifier = defaultVerifier(n, common.verifier);
  const byDefault = verifier !== undefined && common.verifier === undefined ? `, ${verifier} verifier by default` : '';
  return {
    policy,
    policyReason: `${policyReason} (${model} at ${baseUrl}, n=${n}${byDefault})`,
    model: { baseUrl, model, apiKey: pick('apiKey'), n, temperature: pick('temperature'), maxTokens: pick('maxTokensPerTurn'), contextTokens: pick('contextTokens') },
    ...common,
    verifier,
  };
}
