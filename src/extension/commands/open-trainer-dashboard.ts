import * as vscode from 'vscode';
import { TrainerDashboard } from '../trainer/dashboard';
import type { CommandContext, CommandDef } from './context';

/** From a Trainer view job item, a submission id, or a pick of the cluster's jobs. */
export const openTrainerDashboard: CommandDef = {
  id: 'tbrl.openTrainerDashboard',
  async run(ctx: CommandContext, arg) {
    let id: string | undefined;
    if (typeof arg === 'string') id = arg;
    else if (arg && typeof arg === 'object' && 'job' in arg) id = (arg as { job: { submission_id: string } }).job.submission_id;
    if (!id) {
      const client = await ctx.trainer.client();
      if (!client) {
        void vscode.window.showWarningMessage('Not connected to a cluster: run "TBRL: Connect to Cluster" first.');
        return undefined;
      }
      const jobs = await client.list().catch(() => []);
      const pick = await vscode.window.showQuickPick(
        jobs.sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0)).map((j) => ({ label: j.submission_id, description: j.status })),
        { title: 'Training job' },
      );
      id = pick?.label;
    }
    return id ? TrainerDashboard.show(ctx, id) : undefined;
  },
};
