import * as vscode from 'vscode';
import { isAbsolute, join } from 'node:path';
import { TbrlDebugSession } from './session';
import type { LaunchArgs } from './launch-args';
import type { TbrlSettings } from '../settings';

export const DEBUG_TYPE = 'tbrl';
export const API_KEY_SECRET = 'tbrl.model.apiKey';

/**
 * The adapter runs inline in the extension host (no extra process). Launch configurations get
 * defaults from settings, paths resolved against the workspace folder, and the API key from
 * SecretStorage at launch time, so it never appears in launch.json.
 */
export function registerDebugger(context: vscode.ExtensionContext, settings: () => TbrlSettings): void {
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, {
      createDebugAdapterDescriptor: () => new vscode.DebugAdapterInlineImplementation(new TbrlDebugSession() as unknown as vscode.DebugAdapter),
    }),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, {
      resolveDebugConfiguration(_folder, config) {
        if (!config.type && !config.request && !config.name) {
          // F5 without launch.json: replay the trajectory in the active editor, if it is one.
          const doc = vscode.window.activeTextEditor?.document;
          if (doc?.fileName.endsWith('.jsonl')) return { type: DEBUG_TYPE, request: 'launch', name: 'Replay trajectory', trajectory: doc.fileName, stopOnEntry: true };
          void vscode.window.showInformationMessage('Open a trajectory.jsonl (or run "TBRL: Open Trajectory") to debug a run, or add a "tbrl" launch configuration.');
          return undefined;
        }
        return config;
      },
      async resolveDebugConfigurationWithSubstitutedVariables(folder, config) {
        const args = config as vscode.DebugConfiguration & LaunchArgs;
        const base = folder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
        const abs = (p: string | undefined): string | undefined => (p === undefined ? undefined : isAbsolute(p) ? p : join(base, p));
        args.cwd = abs(args.cwd) ?? base;
        args.trajectory = abs(args.trajectory);
        args.task = abs(args.task);
        if (args.task) {
          const s = settings();
          args.runsDir ??= s.runsDir;
          args.maxSteps ??= s.limits.maxSteps;
          args.maxTimeSec ??= s.limits.maxTimeSec;
          args.checkpoint ??= s.debug.checkpoint;
          args.stopBeforeEveryAction ??= s.debug.stopBeforeEveryAction;
          if (args.policy !== 'oracle') {
            args.baseUrl ??= s.model.baseUrl || undefined;
            args.model ??= s.model.name || undefined;
            args.n ??= s.model.n;
            if (s.verifier.mode !== 'none') args.verifier ??= s.verifier.mode;
            args.apiKey = (await context.secrets.get(API_KEY_SECRET)) ?? undefined;
          }
        }
        return args;
      },
    }),
  );
}
