import type { DebugProtocol } from '@vscode/debugprotocol';

/** launch.json attributes of the `tbrl` debugger (the schema is in package.json's configurationAttributes). */
export interface LaunchArgs extends DebugProtocol.LaunchRequestArguments {
  /** Replay this trajectory.jsonl. */
  trajectory?: string;
  /** Run the agent live on this task directory. */
  task?: string;
  stopOnEntry?: boolean;
  /** Live: stop before every action, not only at breakpoints. */
  stopBeforeEveryAction?: boolean;
  /** Breakpoints in addition to the Breakpoints view (see breakpoints.ts for the syntax). */
  breakOn?: string[];
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
  /** Live: keep the checkpoint images when the session ends (for `tbrl run --fork-from` later). */
  keepCheckpoints?: boolean;
  /** Live: step back / reverse continue re-run from the checkpoint before the target step, undoing the container state too (default true; false = view only). */
  stepBackRestores?: boolean;
  trace?: boolean;
  skipReward?: boolean;
  /** A tbrl-studio install with node-llama-cpp for `tbrl serve` (default: tbrl.model.serverPath). */
  serverPath?: string;
  /** Filled in by the extension from SecretStorage; never written to launch.json. */
  apiKey?: string;
}
