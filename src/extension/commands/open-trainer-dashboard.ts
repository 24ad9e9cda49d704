import { TrainerDashboard } from '../trainer/dashboard';
import type { CommandContext, CommandDef } from './context';
import { jobFromArgOrPick } from './trainer';

/** From a Trainer view job item, a submission id, or a pick of the cluster's jobs. */
export const openTrainerDashboard: CommandDef = {
  id: 'tbrl.openTrainerDashboard',
  async run(ctx: CommandContext, arg) {
    const job = await jobFromArgOrPick(ctx, arg, 'Training job');
    return job ? TrainerDashboard.show(ctx, job.id) : undefined;
  },
};
