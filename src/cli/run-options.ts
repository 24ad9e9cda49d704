import { UsageError } from './command';
import type { CliCommand } from './command';
import type { RunTaskOptions } from '../core/run/run-task';
import { VERIFIER_MODES } from '../core/verifier/types';

/**
 * The policy, model, verifier, judge and limit flags shared by every command that runs the
 * orchestrator (`tbrl run`, `tbrl eval`): one definition, so both accept exactly the same options.
 */
export const RUN_POLICY_OPTIONS: NonNullable<CliCommand['options']> = {
  'base-url': { type: 'string' },
  model: { type: 'string' },
  'api-key': { type: 'string' },
  n: { type: 'string' },
  policy: { type: 'string' },
  verifier: { type: 'string' },
  'max-steps': { type: 'string' },
  'max-time': { type: 'string' },
  'max-tokens': { type: 'string' },
  judge: { type: 'string' },
  checkpoint: { type: 'boolean' },
  'no-trace': { type: 'boolean' },
};

export const RUN_POLICY_USAGE = [
  '[--base-url URL] [--model NAME] [--api-key KEY] [--n N] [--policy model|oracle]',
  `[--verifier ${VERIFIER_MODES.join('|')}] [--max-steps N] [--max-time SEC]`,
  '[--max-tokens N] [--judge MODEL] [--checkpoint] [--no-trace]',
];

export type RunPolicyOptions = Pick<RunTaskOptions, 'baseUrl' | 'model' | 'apiKey' | 'n' | 'policy' | 'verifier' | 'maxSteps' | 'maxTimeSec' | 'maxTokens' | 'judgeModel' | 'checkpoint' | 'trace'>;

type Values = Record<string, unknown>;

/** A positive number flag, or undefined when absent; a usage error names the flag and an example. */
export function positiveNumber(values: Values, key: string, integer: boolean): number | undefined {
  const raw = values[key];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n <= 0) {
    throw new UsageError(`--${key} must be a positive ${integer ? 'whole number' : 'number'}, not "${String(raw)}" (e.g. --${key} ${key === 'n' ? 4 : key === 'max-time' ? 600 : 30}).`);
  }
  return n;
}

export function parseRunPolicyOptions(values: Values): RunPolicyOptions {
  const policy = values.policy as string | undefined;
  if (policy !== undefined && policy !== 'model' && policy !== 'oracle') throw new UsageError(`--policy must be model or oracle, not "${policy}"`);
  return {
    baseUrl: values['base-url'] as string | undefined,
    model: values.model as string | undefined,
    apiKey: values['api-key'] as string | undefined,
    n: positiveNumber(values, 'n', true),
    policy: policy as 'model' | 'oracle' | undefined,
    verifier: values.verifier as string | undefined,
    maxSteps: positiveNumber(values, 'max-steps', true),
    maxTimeSec: positiveNumber(values, 'max-time', false),
    maxTokens: positiveNumber(values, 'max-tokens', true),
    judgeModel: values.judge as string | undefined,
    checkpoint: values.checkpoint === true,
    trace: values['no-trace'] !== true,
  };
}
