import type { CommandDef } from './context';
import { pickTrajectory } from './pick';
import { TraceGraphPanel } from '../graph/panel';

/** The DepGPO dependency graph of a run; follows (and drives) the debug session of that run. */
export const showTraceGraph: CommandDef = {
  id: 'tbrl.showTraceGraph',
  async run(ctx, arg) {
    const trajectory = await pickTrajectory(ctx, arg, true);
    if (!trajectory) return false;
    TraceGraphPanel.show(ctx.extension, ctx.tracker, trajectory);
    return true;
  },
};
