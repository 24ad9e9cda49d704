import type { CommandContext, CommandDef } from './context';

export const refreshEvalJobs: CommandDef = {
  id: 'tbrl.refreshEvalJobs',
  run(ctx: CommandContext) {
    ctx.evalJobs.refresh();
  },
};
