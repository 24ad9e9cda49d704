import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import { synthesizeBatch } from '../../core/synth/batch';
import { DOMAINS } from '../../core/synth/domains';
import { SCALE_TIERS, type ScaleTier } from '../../core/synth/types';
import { WRITABLE_FORMATS, type WritableFormat } from '../../core/tasks/formats';
import type { CommandContext, CommandDef } from './context';

/** Parses a whole number >= min from an input box, or says what is wrong (shown inline while typing). */
export function wholeNumberProblem(text: string, min: number): string | undefined {
  return /^\d+$/.test(text.trim()) && Number(text) >= min ? undefined : `A whole number >= ${min}, e.g. ${min === 0 ? 7 : min + 2}`;
}

/** Synthesize gated Tev tasks into a workspace folder through the core batch (same as `tbrl synth`). */
export const synthesizeTasks: CommandDef = {
  id: 'tbrl.synthesizeTasks',
  async run(ctx: CommandContext) {
    const title = 'Synthesize Tasks';
    const domain = await vscode.window.showQuickPick(Object.keys(DOMAINS), { title: `${title}: domain`, ignoreFocusOut: true });
    if (!domain) return undefined;
    const tier = (await vscode.window.showQuickPick([...SCALE_TIERS], { title: `${title}: scale tier`, ignoreFocusOut: true })) as ScaleTier | undefined;
    if (!tier) return undefined;
    const seed = await vscode.window.showInputBox({ title: `${title}: first seed`, value: '1', validateInput: (v) => wholeNumberProblem(v, 0), ignoreFocusOut: true });
    if (seed === undefined) return undefined;
    const count = await vscode.window.showInputBox({ title: `${title}: how many tasks`, value: '3', validateInput: (v) => wholeNumberProblem(v, 1), ignoreFocusOut: true });
    if (count === undefined) return undefined;
    const format = (await vscode.window.showQuickPick([...WRITABLE_FORMATS], { title: `${title}: task format`, ignoreFocusOut: true })) as WritableFormat | undefined;
    if (!format) return undefined;
    const out = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Write tasks here', defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri });
    if (!out?.[0]) return undefined;
    const n = Number(count);
    try {
      const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `TBRL: synthesizing ${n} ${domain} task(s)`, cancellable: true }, (progress, cancel) => {
        let done = 0;
        return synthesizeBatch(out[0].fsPath, {
          domain,
          tier,
          seed: Number(seed),
          count: n,
          format,
          onStart: (t, k) => {
            if (cancel.isCancellationRequested) throw new vscode.CancellationError();
            progress.report({ message: `gating ${t.id} (${k + 1}/${n})` });
          },
          onTask: (t, report) => {
            done++;
            ctx.output.info(`[synth] ${t.id}: ${report.passed ? 'passed every gate' : 'rejected by the gates'}`);
            progress.report({ message: `${t.id} ${report.passed ? 'ok' : 'rejected'} (${done}/${n})`, increment: 100 / n });
            // Tasks already written stay valid; the report covers those done so far only if the batch finishes.
            if (cancel.isCancellationRequested) throw new vscode.CancellationError();
          },
        });
      });
      const written = result.entries.filter((e) => e.written).length;
      ctx.tasks.refresh();
      void vscode.window.showInformationMessage(`TBRL: ${written}/${n} task(s) passed the gates and were written to ${out[0].fsPath}; report in ${result.reportPath}.`);
      return result;
    } catch (err) {
      if (err instanceof vscode.CancellationError) return undefined;
      void vscode.window.showErrorMessage(`Synthesize tasks failed: ${errorMessage(err)}`);
      return undefined;
    }
  },
};
