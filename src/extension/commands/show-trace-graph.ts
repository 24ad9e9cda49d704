import * as vscode from 'vscode';
import type { CommandDef } from './context';
import { pickTrajectory } from './pick';
import { TraceGraphPanel } from '../graph/panel';

/** The DepGPO dependency graph of a run; follows (and drives) the debug session of that run. */
export const showTraceGraph: CommandDef = {
  id: 'tbrl.showTraceGraph',
  async run(ctx, arg) {
    // A live session names its trajectory only when asked; without this the user would get a quick pick of runs.
    const session = vscode.debug.activeDebugSession;
    if (arg === undefined && session?.type === 'tbrl') await ctx.tracker.resolveTrajectory(session);
    const trajectory = await pickTrajectory(ctx, arg, true);
    if (!trajectory) return false;
    await TraceGraphPanel.show(ctx.extension, ctx.tracker, trajectory);
    return true;
  },
};
