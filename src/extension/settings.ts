import { VERIFIER_MODES } from '../core/verifier/types';

/**
 * The one path settings take: package.json `contributes.configuration` (schema, defaults, docs)
 * → `vscode.workspace.getConfiguration('tbrl')` → `readSettings` (typed, validated, with the
 * problem named) → commands and the debug configuration provider. API keys are never settings:
 * they live in SecretStorage (see secrets.ts). This module does not import vscode, so the reader is
 * unit-tested against the manifest.
 */
/** A named endpoint + model (`tbrl.model.profiles`): what a launch configuration's `"profile"` selects. */
export interface ModelProfile {
  baseUrl: string;
  name: string;
  n?: number;
  temperature?: number;
  verifier?: string;
}

export interface TbrlSettings {
  model: { baseUrl: string; name: string; n: number; temperature?: number; profiles: Record<string, ModelProfile>; profile: string; serverPath: string };
  verifier: { mode: string };
  limits: { maxSteps: number; maxTimeSec: number };
  runsDir: string;
  eval: { jobsDir: string };
  docker: { socketPath: string };
  sandbox: { baseImageMap: Record<string, string>; allowPrivileges: string[] };
  debug: { stopBeforeEveryAction: boolean; checkpoint: boolean };
  trainer: { url: string };
}

/** Every key this reader understands, with its default (must equal package.json; a unit test checks). */
export const SETTING_DEFAULTS = {
  'model.baseUrl': '',
  'model.name': '',
  'model.n': 1,
  'model.temperature': null,
  'model.profiles': {},
  'model.profile': '',
  'model.serverPath': '',
  'verifier.mode': 'none',
  'limits.maxSteps': 50,
  'limits.maxTimeSec': 1800,
  runsDir: 'runs',
  'eval.jobsDir': 'jobs',
  'docker.socketPath': '',
  'sandbox.allowPrivileges': [],
  'sandbox.baseImageMap': {},
  'debug.stopBeforeEveryAction': false,
  'debug.checkpoint': true,
  'trainer.url': '',
} as const;

/** The setting's values: `none` and every registered mode (package.json's enums must match; a unit test checks). */
export const VERIFIER_MODE_VALUES: readonly string[] = ['none', ...VERIFIER_MODES];

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
  const allowRaw = get('sandbox.allowPrivileges');
  const allowPrivileges = Array.isArray(allowRaw) ? allowRaw.filter((k): k is string => typeof k === 'string') : [];
  if (allowRaw !== undefined && (!Array.isArray(allowRaw) || allowPrivileges.length !== allowRaw.length)) problems.push('tbrl.sandbox.allowPrivileges must be a list of key names, e.g. ["capAdd"].');
  const profiles = readProfiles(get('model.profiles'), problems);
  let profile = str('model.profile');
  if (profile && !profiles[profile]) {
    problems.push(`tbrl.model.profile "${profile}" is not in tbrl.model.profiles (${Object.keys(profiles).join(', ') || 'none defined'}); using tbrl.model.baseUrl / tbrl.model.name.`);
    profile = '';
  }
  return {
    settings: {
      model: { baseUrl: str('model.baseUrl'), name: str('model.name'), n: int('model.n', 1), ...(temperature !== undefined ? { temperature } : {}), profiles, profile, serverPath: str('model.serverPath') },
      verifier: { mode },
      limits: { maxSteps: int('limits.maxSteps', 1), maxTimeSec: int('limits.maxTimeSec', 1) },
      runsDir: str('runsDir') || 'runs',
      eval: { jobsDir: str('eval.jobsDir') || 'jobs' },
      docker: { socketPath: str('docker.socketPath') },
      sandbox: { baseImageMap, allowPrivileges },
      debug: { stopBeforeEveryAction: bool('debug.stopBeforeEveryAction'), checkpoint: bool('debug.checkpoint') },
      trainer: { url: str('trainer.url') },
    },
    problems,
  };
}

const PROFILE_EXAMPLE = '"tbrl.model.profiles": {"local": {"baseUrl": "http://localhost:8000/v1", "name": "qwen3-8b", "n": 4, "verifier": "pairwise"}}';

function readProfiles(raw: unknown, problems: string[]): Record<string, ModelProfile> {
  const out: Record<string, ModelProfile> = {};
  if (raw === undefined || raw === null) return out;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push(`tbrl.model.profiles must be an object of named profiles, e.g. ${PROFILE_EXAMPLE}.`);
    return out;
  }
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    const p = value as Partial<Record<keyof ModelProfile, unknown>> | null;
    const bad: string[] = [];
    if (typeof p !== 'object' || p === null || Array.isArray(p)) bad.push('it is not an object');
    else {
      if (typeof p.baseUrl !== 'string' || !p.baseUrl) bad.push('"baseUrl" must be a non-empty string');
      if (typeof p.name !== 'string' || !p.name) bad.push('"name" must be a non-empty string');
      if (p.n !== undefined && (typeof p.n !== 'number' || !Number.isInteger(p.n) || p.n < 1)) bad.push('"n" must be a whole number >= 1');
      if (p.temperature !== undefined && (typeof p.temperature !== 'number' || p.temperature < 0 || p.temperature > 2)) bad.push('"temperature" must be a number in [0, 2]');
      if (p.verifier !== undefined && !(VERIFIER_MODE_VALUES as readonly unknown[]).includes(p.verifier)) bad.push(`"verifier" must be one of ${VERIFIER_MODE_VALUES.join(', ')}`);
    }
    if (bad.length) {
      problems.push(`tbrl.model.profiles["${name}"] is ignored: ${bad.join('; ')}. Example: ${PROFILE_EXAMPLE}.`);
      continue;
    }
    const q = p as ModelProfile;
    out[name] = { baseUrl: q.baseUrl, name: q.name, ...(q.n !== undefined ? { n: q.n } : {}), ...(q.temperature !== undefined ? { temperature: q.temperature } : {}), ...(q.verifier !== undefined ? { verifier: q.verifier } : {}) };
  }
  return out;
}

/** The SecretStorage key of a profile's API key; the plain tbrl.model.* endpoint uses the first. */
export const API_KEY_SECRET = 'tbrl.model.apiKey';
export const profileSecret = (profile: string | undefined): string => (profile ? `${API_KEY_SECRET}/${profile}` : API_KEY_SECRET);

/** A profile's own key, else the default one (one key often serves several models of an endpoint). */
export async function apiKeyFor(profile: string | undefined, secret: (key: string) => PromiseLike<string | undefined>): Promise<string | undefined> {
  return (profile ? await secret(profileSecret(profile)) : undefined) ?? (await secret(API_KEY_SECRET)) ?? undefined;
}

export interface ResolvedModel {
  /** The profile used, if any. */
  profile?: string;
  baseUrl: string;
  name: string;
  n: number;
  temperature?: number;
  verifier: string;
}

/**
 * The endpoint a run uses: the named profile (a launch configuration's "profile", else the
 * tbrl.model.profile setting) over the plain tbrl.model.* / tbrl.verifier.mode settings.
 */
export function resolveModel(settings: TbrlSettings, profile?: string): ResolvedModel | { error: string } {
  const name = profile ?? (settings.model.profile || undefined);
  const base: ResolvedModel = {
    baseUrl: settings.model.baseUrl,
    name: settings.model.name,
    n: settings.model.n,
    ...(settings.model.temperature !== undefined ? { temperature: settings.model.temperature } : {}),
    verifier: settings.verifier.mode,
  };
  if (name === undefined) return base;
  const p = settings.model.profiles[name];
  if (!p) {
    const known = Object.keys(settings.model.profiles);
    return { error: `Model profile "${name}" is not in tbrl.model.profiles (${known.length ? `known: ${known.join(', ')}` : 'none is defined'}). Add it to your settings, e.g. ${PROFILE_EXAMPLE.replace('"local"', JSON.stringify(name))}, or remove "profile" from the launch configuration.` };
  }
  const temperature = p.temperature ?? base.temperature;
  return { profile: name, baseUrl: p.baseUrl, name: p.name, n: p.n ?? base.n, ...(temperature !== undefined ? { temperature } : {}), verifier: p.verifier ?? base.verifier };
}

