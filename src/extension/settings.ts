/**
 * The one path settings take: package.json `contributes.configuration` (schema, defaults, docs)
 * → `vscode.workspace.getConfiguration('tbrl')` → `readSettings` (typed, validated, with the
 * problem named) → commands and the debug configuration provider. API keys are never settings:
 * they live in SecretStorage (see secrets.ts). This module does not import vscode, so the reader is
 * unit-tested against the manifest.
 */
export interface TbrlSettings {
  model: { baseUrl: string; name: string; n: number; temperature?: number };
  verifier: { mode: string };
  limits: { maxSteps: number; maxTimeSec: number };
  runsDir: string;
  docker: { socketPath: string };
  sandbox: { baseImageMap: Record<string, string> };
  debug: { stopBeforeEveryAction: boolean; checkpoint: boolean };
  trainer: { url: string };
}

/** Every key this reader understands, with its default (must equal package.json; a unit test checks). */
export const SETTING_DEFAULTS = {
  'model.baseUrl': '',
  'model.name': '',
  'model.n': 1,
  'model.temperature': null,
  'verifier.mode': 'none',
  'limits.maxSteps': 50,
  'limits.maxTimeSec': 1800,
  runsDir: 'runs',
  'docker.socketPath': '',
  'sandbox.baseImageMap': {},
  'debug.stopBeforeEveryAction': false,
  'debug.checkpoint': true,
  'trainer.url': '',
} as const;

export const VERIFIER_MODE_VALUES = ['none', 'listwise', 'pointwise', 'pairwise', 'decision-only'] as const;

export function readSettings(get: (key: string) => unknown): { settings: TbrlSettings; problems: string[] } {
  const problems: string[] = [];
  const str = (key: keyof typeof SETTING_DEFAULTS): string => {
    const v = get(key);
    if (v === undefined || v === null) return SETTING_DEFAULTS[key] as string;
    if (typeof v !== 'string') {
      problems.push(`tbrl.${key} must be a string (got ${JSON.stringify(v)}); using "${String(SETTING_DEFAULTS[key])}".`);
      return SETTING_DEFAULTS[key] as string;
    }
    return v;
  };
  const int = (key: keyof typeof SETTING_DEFAULTS, min: number): number => {
    const v = get(key);
    if (v === undefined || v === null) return SETTING_DEFAULTS[key] as number;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
      problems.push(`tbrl.${key} must be a whole number >= ${min} (got ${JSON.stringify(v)}); using ${String(SETTING_DEFAULTS[key])}.`);
      return SETTING_DEFAULTS[key] as number;
    }
    return v;
  };
  const bool = (key: keyof typeof SETTING_DEFAULTS): boolean => {
    const v = get(key);
    return typeof v === 'boolean' ? v : (SETTING_DEFAULTS[key] as boolean);
  };
  let mode = str('verifier.mode');
  if (!(VERIFIER_MODE_VALUES as readonly string[]).includes(mode)) {
    problems.push(`tbrl.verifier.mode "${mode}" is not one of ${VERIFIER_MODE_VALUES.join(', ')}; using none.`);
    mode = 'none';
  }
  const temp = get('model.temperature');
  let temperature: number | undefined;
  if (typeof temp === 'number' && temp >= 0 && temp <= 2) temperature = temp;
  else if (temp !== undefined && temp !== null) problems.push(`tbrl.model.temperature must be a number in [0, 2] (got ${JSON.stringify(temp)}); using the endpoint's default.`);
  const map = get('sandbox.baseImageMap');
  const baseImageMap: Record<string, string> = {};
  if (map && typeof map === 'object' && !Array.isArray(map)) {
    for (const [k, v] of Object.entries(map)) {
      if (typeof v === 'string') baseImageMap[k] = v;
      else problems.push(`tbrl.sandbox.baseImageMap["${k}"] must be an image name string, e.g. "python:3.13-slim": "tbrl-standin/python:3".`);
    }
  }
  return {
    settings: {
      model: { baseUrl: str('model.baseUrl'), name: str('model.name'), n: int('model.n', 1), ...(temperature !== undefined ? { temperature } : {}) },
      verifier: { mode },
      limits: { maxSteps: int('limits.maxSteps', 1), maxTimeSec: int('limits.maxTimeSec', 1) },
      runsDir: str('runsDir') || 'runs',
      docker: { socketPath: str('docker.socketPath') },
      sandbox: { baseImageMap },
      debug: { stopBeforeEveryAction: bool('debug.stopBeforeEveryAction'), checkpoint: bool('debug.checkpoint') },
      trainer: { url: str('trainer.url') },
    },
    problems,
  };
}
