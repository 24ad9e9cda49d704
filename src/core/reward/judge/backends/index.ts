import { TbrlError } from '../../../errors';
import type { ModelClientOptions } from '../../../model/client';
import type { JudgeBackend, JudgeBackendKind } from './backend';
import { commandBackend } from './command';
import { openaiBackend } from './openai';

/**
 * Where judge prompts go. To add a backend: a file in this folder exporting its
 * `JudgeBackendKind` (config type, parser, label, factory) and one line in this list.
 */
export const JUDGE_BACKEND_KINDS = [
  openaiBackend,
  commandBackend,
] as const;

/** One backend's configuration, told apart by `kind`. */
export type JudgeBackendConfig = ReturnType<(typeof JUDGE_BACKEND_KINDS)[number]['parse']>;
export type { JudgeBackend } from './backend';
export { renderForCommand } from './command';

const EXAMPLES = JUDGE_BACKEND_KINDS.map((k) => k.example).join('\n  or\n');

/** The registered kind of a config; the cast is safe because each kind only ever sees its own configs. */
function kindOf(config: JudgeBackendConfig): JudgeBackendKind<JudgeBackendConfig> {
  return JUDGE_BACKEND_KINDS.find((k) => k.kind === config.kind) as unknown as JudgeBackendKind<JudgeBackendConfig>;
}

export function backendLabel(c: JudgeBackendConfig): string {
  return kindOf(c).label(c);
}

/** Validates untrusted configuration (a control file, a setting) into a backend config. */
export function parseBackendConfig(value: unknown, source: string): JudgeBackendConfig {
  const fail = (what: string): never => {
    throw new TbrlError('judge.bad-backend', `${source}: ${what}`, `write one judge backend as JSON, e.g.\n  ${EXAMPLES}`);
  };
  if (!value || typeof value !== 'object' || Array.isArray(value)) return fail('the judge backend must be a JSON object');
  const v = value as Record<string, unknown>;
  const optNumber = (k: string) => {
    if (v[k] !== undefined && (typeof v[k] !== 'number' || !Number.isFinite(v[k] as number) || (v[k] as number) < 0)) fail(`"${k}" must be a non-negative number`);
    return v[k] as number | undefined;
  };
  const optString = (k: string) => {
    if (v[k] !== undefined && typeof v[k] !== 'string') fail(`"${k}" must be a string`);
    return v[k] as string | undefined;
  };
  const kind = JUDGE_BACKEND_KINDS.find((k) => k.kind === v.kind);
  if (!kind) return fail(`"kind" must be ${JUDGE_BACKEND_KINDS.map((k) => `"${k.kind}"`).join(' or ')}, got ${JSON.stringify(v.kind)}`);
  return kind.parse(v, { fail, optString, optNumber });
}

export function createBackend(config: JudgeBackendConfig, clientOptions?: ModelClientOptions): JudgeBackend {
  return kindOf(config).create(config, clientOptions);
}
