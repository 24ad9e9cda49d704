import * as vscode from 'vscode';
import { TbrlDebugSession } from './session';
import type { LaunchArgs } from './launch-args';
import type { TbrlSettings } from '../settings';
import { fillLaunchDefaults } from './launch-defaults';

export const DEBUG_TYPE = 'tbrl';

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
        const base = folder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
        const args = await fillLaunchDefaults(config as vscode.DebugConfiguration & LaunchArgs, base, settings(), async (key) => context.secrets.get(key));
        if ('error' in args) {
          void vscode.window.showErrorMessage(args.error, 'Open Settings').then((c) => c && vscode.commands.executeCommand('workbench.action.openSettings', 'tbrl.model.profiles'));
          // undefined aborts the launch: the run must not silently fall back to another model.
          return undefined;
        }
        return args as vscode.DebugConfiguration;
      },
    }),
  );
}
