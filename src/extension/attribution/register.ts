import * as vscode from 'vscode';
import { ContainerFileSystem } from './fs-provider';
import { AttributionDecorator } from './decorator';
import { CONTAINER_SCHEME } from './uri';

/** The read-only `tbrl-container:` file system and the line attribution shown on its files. */
export function registerAttribution(context: vscode.ExtensionContext, output: vscode.LogOutputChannel): void {
  context.subscriptions.push(
    vscode.workspace.registerFileSystemProvider(CONTAINER_SCHEME, new ContainerFileSystem(), { isReadonly: true, isCaseSensitive: true }),
    new AttributionDecorator(output),
  );
}
