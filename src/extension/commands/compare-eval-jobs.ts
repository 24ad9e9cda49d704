import * as vscode from 'vscode';
import { basename } from 'node:path';
import { EvalComparePanel } from '../eval/compare-panel';
import type { EvalJobNode } from '../views/jobs';
import type { CommandContext, CommandDef } from './context';

/** The selected Eval Jobs items (a multi-selection passes them all), else a multi-pick with the two newest pre-picked. */
export const compareEvalJobs: CommandDef = {
  id: 'tbrl.compareEvalJobs',
  async run(ctx: CommandContext, arg, selected) {
    const fromTree = (Array.isArray(selected) ? selected : arg ? [arg] : []) as EvalJobNode[];
    const all = ctx.evalJobs.jobDirs();
    let dirs = fromTree.filter((n) => n && typeof n === 'object' && n.kind === 'job').map((n) => (n as Extract<EvalJobNode, { kind: 'job' }>).loaded.dir);
    if (dirs.length < 2) {
      if (all.length === 0) {
        void vscode.window.showInformationMessage(`No eval jobs in this workspace's ${ctx.settings().eval.jobsDir}/ folder yet: run "TBRL: Run Evaluation…" first.`);
        return undefined;
      }
      const chosen = new Set(dirs.length ? dirs : all.slice(0, 2));
      const picks = await vscode.window.showQuickPick(all.map((d) => ({ label: basename(d), detail: d, dir: d, picked: chosen.has(d) })), { title: 'Compare Eval Jobs (the first is the baseline)', canPickMany: true });
      if (!picks?.length) return undefined;
      dirs = picks.map((p) => p.dir);
    }
    // Oldest first: the baseline is the earlier job and the differences read "newer − older".
    const age = (d: string): number => (all.includes(d) ? all.indexOf(d) : all.length);
    dirs = [...new Set(dirs)].sort((a, b) => age(b) - age(a));
    return EvalComparePanel.show(ctx, dirs);
  },
};
