import { isAbsolute, join } from 'node:path';
import { apiKeyFor, resolveModel, type TbrlSettings } from '../settings';
import type { LaunchArgs } from './launch-args';
import { defaultVerifier } from '../../core/run/config';

/**
 * What a `tbrl` launch configuration becomes before the adapter sees it: paths resolved against
 * the workspace folder, and for a live run the limits, checkpointing, allowed privilege keys and
 * model from settings (the launch's "profile", else tbrl.model.profile, over tbrl.model.*), with the API key read from
 * SecretStorage only now, so it is never in launch.json. Attributes the launch sets always win.
 * No vscode import: the debug configuration provider calls this and the unit tests do too.
 */
export async function fillLaunchDefaults(args: LaunchArgs, base: string, s: TbrlSettings, secret: (key: string) => Promise<string | undefined>): Promise<LaunchArgs | { error: string }> {
  const abs = (p: string | undefined): string | undefined => (p === undefined ? undefined : isAbsolute(p) ? p : join(base, p));
  args.cwd = abs(args.cwd) ?? base;
  args.trajectory = abs(args.trajectory);
  args.task = abs(args.task);
  if (!args.task) return args;
  args.runsDir ??= s.runsDir;
  args.maxSteps ??= s.limits.maxSteps;
  args.maxTimeSec ??= s.limits.maxTimeSec;
  args.checkpoint ??= s.debug.checkpoint;
  args.stopBeforeEveryAction ??= s.debug.stopBeforeEveryAction;
  // As `tbrl run --allow-privilege`; with none set, the run still reads TBRL_ALLOW_PRIVILEGES like the CLI.
  if (args.allowPrivileges === undefined && s.sandbox.allowPrivileges.length) args.allowPrivileges = [...s.sandbox.allowPrivileges];
  if (args.policy === 'oracle') return args;
  // Where `tbrl serve` finds node-llama-cpp when the run serves the local model (the .vsix has none).
  args.serverPath ??= s.model.serverPath || undefined;
  if (args.policy === 'local') {
    // No endpoint: runTask starts `tbrl serve` on the cached model (and says so in the output).
    args.policy = 'model';
    args.baseUrl = undefined;
    args.model = undefined;
    return args;
  }
  const m = resolveModel(s, args.profile);
  if ('error' in m) return m;
  args.baseUrl ??= m.baseUrl || undefined;
  args.model ??= m.name || undefined;
  args.n ??= m.n;
  args.temperature ??= m.temperature;
  // Settings' "none" means not chosen: with n > 1 the run's default verifier (as on the command line).
  args.verifier ??= defaultVerifier(args.n ?? 1, m.verifier !== 'none' ? m.verifier : undefined);
  args.apiKey = await apiKeyFor(m.profile, secret);
  return args;
}
