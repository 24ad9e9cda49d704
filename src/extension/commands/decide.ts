import * as vscode from 'vscode';
import type { CommandDef } from './context';

/**
 * Human in the loop, when a live run is stopped before a turn: accept the verifier's pick, pick
 * another candidate, edit the turn, or stop. The adapter records the choice as preference labels.
 */
export const decide: CommandDef = {
  id: 'tbrl.decide',
  async run() {
    const session = vscode.debug.activeDebugSession;
    if (session?.type !== 'tbrl') {
      void vscode.window.showWarningMessage('No TBRL debug session is active.');
      return undefined;
    }
    const state = await session.customRequest('tbrl/state');
    if (state.pending === null) {
      void vscode.window.showInformationMessage('No turn is waiting: decisions apply when a live run is stopped before an action.');
      return undefined;
    }
    const frames = await session.customRequest('stackTrace', { threadId: 1, startFrame: 0, levels: 1 });
    const scopes = await session.customRequest('scopes', { frameId: frames.stackFrames[0].id });
    const candScope = scopes.scopes.find((s: { name: string }) => s.name === 'Candidates');
    const cands: Array<{ name: string; value: string }> = candScope ? (await session.customRequest('variables', { variablesReference: candScope.variablesReference })).variables : [];
    const items: Array<vscode.QuickPickItem & { decision: Record<string, unknown> }> = [
      { label: '$(check) Accept the verifier\'s pick', decision: { action: 'accept' } },
      ...cands.filter((c) => /^\d+/.test(c.name)).map((c) => ({ label: `$(list-selection) Candidate ${c.name}`, detail: c.value, decision: { action: 'pick', candidate: Number.parseInt(c.name, 10) } })),
      { label: '$(edit) Edit the turn…', decision: { action: 'edit' } },
      { label: '$(debug-stop) Stop the run', decision: { action: 'stop' } },
    ];
    const choice = await vscode.window.showQuickPick(items, { placeHolder: `Step ${state.pending}: what should run?` });
    if (!choice) return undefined;
    if (choice.decision.action === 'edit') {
      const src = await session.customRequest('source', { sourceReference: state.pending + 1, source: { sourceReference: state.pending + 1 } });
      const original = String(src.content).split('\n# ── not run yet ──')[0];
      const text = await vscode.window.showInputBox({ prompt: 'Edited turn (the agent\'s action markup)', value: original, ignoreFocusOut: true });
      if (!text) return undefined;
      choice.decision.text = text;
    }
    return session.customRequest('tbrl/decide', { ...choice.decision, stopAfter: true });
  },
};
