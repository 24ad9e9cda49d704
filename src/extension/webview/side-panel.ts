import * as vscode from 'vscode';

/**
 * Opens a webview panel beside the active editor, for the views that follow a debug session (the
 * step inspector, the trace graph), and locks its group when the panel is alone there.
 *
 * The debugger opens each stop's turn in the active editor group. A click in the panel makes its
 * group the active one, and a stop that lands before the focus is given back (a "Stop run" ends
 * the run at once) opened its turn over the panel. VS Code skips a locked group when an editor
 * opens in "the active group"; Cline and Claude Code lock their panels' groups the same way, and
 * `workbench.editor.autoLockGroups` does it for VS Code's own previews. The user can unlock it
 * from the group's toolbar. Keyboard focus ends in the first group, where the turns open.
 */
export async function openSidePanel(viewType: string, title: string, options: vscode.WebviewPanelOptions & vscode.WebviewOptions): Promise<vscode.WebviewPanel> {
  // Focused, so that its group is the active one: the lock command acts on the active group only.
  const panel = vscode.window.createWebviewPanel(viewType, title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false }, options);
  try {
    const group = await groupOf(viewType, 3_000);
    // Only a group of its own: a group the user already keeps files in is theirs to lock or not.
    if (group?.isActive && group.tabs.length === 1 && vscode.window.tabGroups.all.length > 1) await vscode.commands.executeCommand('workbench.action.lockEditorGroup');
  } finally {
    await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
  }
  return panel;
}

/** The tab group showing the panel of `viewType` once the workbench reports it active (tab events reach the extension host after the panel is created), or undefined after `timeoutMs`. */
function groupOf(viewType: string, timeoutMs: number): Promise<vscode.TabGroup | undefined> {
  // The workbench reports a webview tab's viewType with its own prefix (mainThreadWebview-).
  const find = () => vscode.window.tabGroups.all.find((g) => g.isActive && g.tabs.some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(viewType)));
  const now = find();
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => {
    const subscriptions: vscode.Disposable[] = [];
    const done = (g: vscode.TabGroup | undefined) => {
      clearTimeout(timer);
      for (const s of subscriptions.splice(0)) s.dispose();
      resolve(g);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    const check = () => {
      const g = find();
      if (g) done(g);
    };
    subscriptions.push(vscode.window.tabGroups.onDidChangeTabs(check), vscode.window.tabGroups.onDidChangeTabGroups(check));
  });
}
