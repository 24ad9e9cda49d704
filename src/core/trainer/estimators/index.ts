import { TbrlError } from '../../errors';
import { bridgeFile, readBridgeJson } from '../bridge-json';
import { DEPGPO } from './depgpo';
import { GRPO } from './grpo';
import type { AlgorithmSpec, EstimatorImpl } from './types';

export type { AlgorithmSpec, EstimatorImpl } from './types';

/**
 * The TypeScript halves of the advantage estimators. An estimator is one entry in
 * trainer-bridge/tbrl_bridge/algorithms.json (read here and by the bridge, as presets.json is),
 * one file in this folder with one line here, and tbrl_bridge/estimators/<name>.py.
 */
const IMPLEMENTATIONS = [
  GRPO,
  DEPGPO,
] as const;

export type Algorithm = (typeof IMPLEMENTATIONS)[number]['id'];

const cache = new Map<string, Record<string, AlgorithmSpec>>();

export function algorithmsFile(bridgeDir?: string): string {
  return bridgeFile('algorithms.json', bridgeDir);
}

/** algorithms.json, checked against the implementations here (each entry needs one, and each one an entry). */
export function loadAlgorithms(bridgeDir?: string): Record<string, AlgorithmSpec> {
  const file = algorithmsFile(bridgeDir);
  const hit = cache.get(file);
  if (hit) return hit;
  const specs = readBridgeJson<Record<string, AlgorithmSpec>>(file, 'train-algorithms', 'the advantage estimators');
  const names = Object.keys(specs);
  const missing = names.filter((n) => !IMPLEMENTATIONS.some((i) => i.id === n));
  const unlisted = IMPLEMENTATIONS.map((i) => i.id).filter((id) => !names.includes(id));
  const defaults = names.filter((n) => specs[n].default === true);
  if (missing.length || unlisted.length || defaults.length !== 1) {
    throw new TbrlError(
      'train-algorithms',
      `${file} and src/core/trainer/estimators/ disagree: ${[missing.length ? `no TypeScript estimator for ${missing.join(', ')}` : '', unlisted.length ? `${unlisted.join(', ')} not in algorithms.json` : '', defaults.length !== 1 ? `${defaults.length} entries marked "default" (need exactly 1)` : ''].filter(Boolean).join('; ')}.`,
      'Add the estimator to both (one entry in algorithms.json, one file in src/core/trainer/estimators/ listed in its index.ts).',
    );
  }
  cache.set(file, specs);
  return specs;
}

/** The estimator names, in algorithms.json's order (usage text, pickers). */
export function algorithmNames(bridgeDir?: string): Algorithm[] {
  return Object.keys(loadAlgorithms(bridgeDir)) as Algorithm[];
}

export function defaultAlgorithm(bridgeDir?: string): Algorithm {
  const specs = loadAlgorithms(bridgeDir);
  return Object.keys(specs).find((n) => specs[n].default === true) as Algorithm;
}

export function isAlgorithm(name: unknown, bridgeDir?: string): name is Algorithm {
  return typeof name === 'string' && Object.hasOwn(loadAlgorithms(bridgeDir), name);
}

/** The implementation of a listed estimator. */
export function estimatorFor(name: Algorithm): EstimatorImpl<Algorithm> {
  return IMPLEMENTATIONS.find((i) => i.id === name)!;
}

/** `--algorithm` choices for a sentence: "grpo or depgpo". */
export function algorithmChoices(bridgeDir?: string): string {
  const names = algorithmNames(bridgeDir);
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}
