import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';

/**
 * What every webview panel of the extension shares: resources only from dist/ and media/, and a
 * strict CSP whose only script is the app bundle, admitted by a nonce made fresh on every load
 * (no inline script or style, no eval). The chaos webview case checks this policy.
 */
export function webviewResourceRoots(extensionUri: vscode.Uri): vscode.Uri[] {
  return [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')];
}

export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: webviewResourceRoots(extensionUri) };
}

/** The page of webview app `app`: dist/webview/<app>.js with media/<app>.css. */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, app: string, title: string): string {
  const nonce = randomBytes(16).toString('base64');
  const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview', `${app}.js`));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', `${app}.css`));
  const csp = [`default-src 'none'`, `style-src ${webview.cspSource}`, `img-src ${webview.cspSource} data:`, `script-src 'nonce-${nonce}'`, `font-src ${webview.cspSource}`].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>${title}</title>
</head>
<body>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}
