import { TbrlError } from '../errors';
import { bridgeFile, readBridgeJson } from './bridge-json';

/**
 * Training presets live in trainer-bridge/tbrl_bridge/presets.json, read by the cluster-side entrypoint
 * (which turns them into Hydra overrides) and here (to check a name before anything is uploaded).
 */
export interface Preset {
  description: string;
  gpu: boolean;
  model?: string;
  nnodes?: number;
  nGpusPerNode?: number;
  rolloutsPerTask?: number;
  maxSteps?: number;
  lr?: number;
  temperature?: number;
  clipRatioHigh?: number;
  entrypointNumCpus?: number;
  /** The job brings its own tasks when the bundle has none (cpu-tiny: the echo-word family). */
  builtinTasks?: boolean;
  [key: string]: unknown;
}

const cache = new Map<string, Record<string, Preset>>();

export function presetsFile(bridgeDir?: string): string {
  return bridgeFile('presets.json', bridgeDir);
}

export function loadPresets(bridgeDir?: string): Record<string, Preset> {
  const file = presetsFile(bridgeDir);
  const hit = cache.get(file);
  if (hit) return hit;
  const presets = readBridgeJson<Record<string, Preset>>(file, 'train-presets', 'the training presets');
  cache.set(file, presets);
  return presets;
}

export function getPreset(name: string, bridgeDir?: string): Preset {
  const presets = loadPresets(bridgeDir);
  const p = presets[name];
  if (!p) throw new TbrlError('train-preset', `Unknown preset "${name}".`, `Use one of: ${Object.keys(presets).join(', ')} (e.g. --preset dryrun to check a bundle on a CPU-only cluster).`);
  return p;
}
