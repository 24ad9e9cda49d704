import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TbrlError, errorMessage } from '../../errors';
import { parseBackendConfig, type JudgeBackendConfig } from './backends';
import { JudgeBackendSwitch, type BackendSwitchOptions } from './switch';

/** Where a headless run looks for the judge control file unless told otherwise. */
export const DEFAULT_JUDGE_CONTROL_FILE = join('.tbrl', 'judge-backend.json');

export interface JudgeSettings {
  /** An explicit backend (editor setting, config file). */
  backend?: JudgeBackendConfig | unknown;
  /** Control file path (absolute or relative to cwd). */
  controlFile?: string;
}

/**
 * The judge backend a run starts with, from (highest first) explicit settings, then the
 * environment (TBRL_JUDGE_BASE_URL + TBRL_JUDGE_MODEL [+ TBRL_JUDGE_API_KEY_ENV], or
 * TBRL_JUDGE_COMMAND), and the control file (TBRL_JUDGE_CONTROL, default .tbrl/judge-backend.json)
 * which, when present, overrides both while it exists. Returns undefined when no judge is
 * configured anywhere: the reward is then tests only.
 */
export function resolveJudgeSwitch(
  options: { settings?: JudgeSettings; env?: NodeJS.ProcessEnv; cwd?: string } & Omit<BackendSwitchOptions, 'controlFile'> = {},
): JudgeBackendSwitch | undefined {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  let initial: JudgeBackendConfig | undefined;
  if (options.settings?.backend !== undefined) initial = parseBackendConfig(options.settings.backend, 'judge backend setting');
  else if (env.TBRL_JUDGE_COMMAND) {
    const [command, ...args] = env.TBRL_JUDGE_COMMAND.split(/\s+/).filter(Boolean);
    initial = parseBackendConfig({ kind: 'command', command, args }, 'TBRL_JUDGE_COMMAND');
  } else if (env.TBRL_JUDGE_BASE_URL || env.TBRL_JUDGE_MODEL) {
    if (!env.TBRL_JUDGE_BASE_URL || !env.TBRL_JUDGE_MODEL) {
      throw new TbrlError('judge.bad-backend', 'TBRL_JUDGE_BASE_URL and TBRL_JUDGE_MODEL must be set together.', 'export TBRL_JUDGE_BASE_URL=http://localhost:8000/v1 TBRL_JUDGE_MODEL=qwen3-32b');
    }
    initial = parseBackendConfig({ kind: 'openai', baseUrl: env.TBRL_JUDGE_BASE_URL, model: env.TBRL_JUDGE_MODEL, apiKeyEnv: env.TBRL_JUDGE_API_KEY_ENV }, 'TBRL_JUDGE_* environment');
  }
  const controlFile = resolve(cwd, options.settings?.controlFile ?? env.TBRL_JUDGE_CONTROL ?? DEFAULT_JUDGE_CONTROL_FILE);
  if (!initial && !existsSync(controlFile)) return undefined;
  if (!initial) {
    // Validate now so a typo fails the run at the start rather than silently dropping the judge.
    try {
      parseBackendConfig(JSON.parse(readFileSync(controlFile, 'utf8')), controlFile);
    } catch (err) {
      if (err instanceof TbrlError) throw err;
      throw new TbrlError('judge.bad-backend', `${controlFile}: not valid JSON: ${errorMessage(err)}`, 'write one backend, e.g. {"kind": "command", "command": "claude", "args": ["-p"]}');
    }
  }
  return new JudgeBackendSwitch(initial, { ...options, controlFile });
}
