import * as vscode from 'vscode';
import type { CommandDef } from './context';
import { choiceItems } from '../debug/decisions';
import { decideTurn, pendingTurnOf } from '../debug/decide-turn';

/**
 * Human in the loop, when a live run is stopped before a turn: accept the verifier's pick, pick
 * another candidate, edit the turn, or stop. The adapter records the choice as preference labels.
 * The step inspector's buttons take the same path (debug/decide-turn.ts).
 */
export const decide: CommandDef = {
  id: 'tbrl.decide',
  async run(ctx) {
    const session = vscode.debug.activeDebugSession;
    if (session?.type !== 'tbrl') {
      void vscode.window.showWarningMessage('No TBRL debug session is active.');
      return undefined;
    }
    const turn = await pendingTurnOf(session);
    if (!turn) {
      void vscode.window.showInformationMessage('No turn is waiting: decisions apply when a live run is stopped before an action.');
      return undefined;
    }
    const choice = await vscode.window.showQuickPick(choiceItems(turn), { placeHolder: `Step ${turn.step}: what should run?` });
    if (!choice) return undefined;
    const outcome = await decideTurn(ctx.tracker, session, choice.choice, turn.step);
    if (outcome.sent) vscode.window.setStatusBarMessage(outcome.message, 8000);
    else void vscode.window.showWarningMessage(outcome.message);
    return outcome;
  },
};
