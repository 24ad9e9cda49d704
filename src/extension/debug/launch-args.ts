import type { DebugProtocol } from '@vscode/debugprotocol';
import type { RuntimeLaunchArgs } from '../../core/debug/runtime';

/**
 * launch.json attributes of the `tbrl` debugger (the schema is in package.json's configurationAttributes):
 * the ones the stepping runtime reads (RuntimeLaunchArgs: trajectory, task, stopOnEntry, breakOn...)
 * and the live run's model, limits and sandbox options.
 */
export interface LaunchArgs extends DebugProtocol.LaunchRequestArguments, RuntimeLaunchArgs {
  /** `local`: the cached local default model served by `tbrl serve`, whatever endpoint the settings name. */
  policy?: 'model' | 'oracle' | 'local';
  /** Live: a named profile of tbrl.model.profiles (endpoint, model, n, temperature, verifier). */
  profile?: string;
  temperature?: number;
  baseUrl?: string;
  model?: string;
  n?: number;
  verifier?: string;
  maxSteps?: number;
  maxTimeSec?: number;
  runsDir?: string;
  cwd?: string;
  /** Live: commit the container after each step so restart frame can fork from it (default true). */
  checkpoint?: boolean;
  trace?: boolean;
  skipReward?: boolean;
  /** Live: privilege keys allowed for the task (tasks/confine.ts); default the tbrl.sandbox.allowPrivileges setting. */
  allowPrivileges?: string[];
  /** A tbrl-studio install with node-llama-cpp for `tbrl serve` (default: tbrl.model.serverPath). */
  serverPath?: string;
  /** Filled in by the extension from SecretStorage; never written to launch.json. */
  apiKey?: string;
}
