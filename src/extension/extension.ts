import * as vscode from 'vscode';

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('TBRL Studio', { log: true });
  context.subscriptions.push(output);
  output.info('TBRL Studio activated');
}

export function deactivate(): void {}
