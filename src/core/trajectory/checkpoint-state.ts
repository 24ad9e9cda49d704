import { isSecretName, scanText } from '../trainer/secrets';
import type { StepRecord } from './schema';

/**
 * The shell state of a checkpoint as it may be written to a trajectory: trajectories are shared,
 * exported and uploaded for training, so secret-named variables and values shaped like provider
 * keys are dropped (by name only, so the file never holds the value).
 */
export function checkpointShellState(cwd: string, env: Record<string, string>): NonNullable<StepRecord['checkpointState']> {
  const kept: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (isSecretName(name) || scanText(name, value, []).length > 0) dropped.push(name);
    else kept[name] = value;
  }
  return { cwd, env: kept, ...(dropped.length ? { droppedEnv: dropped.sort() } : {}) };
}
