import type { CommandDef } from './context';
import { pickTrajectory } from './pick';
import { StepInspectorPanel } from '../inspector/panel';

/** Candidates, verifier matrix, reward breakdown and Φ of the step the tbrl debugger is stopped at. */
export const showStepInspector: CommandDef = {
  id: 'tbrl.showStepInspector',
  async run(ctx, arg) {
    const trajectory = await pickTrajectory(ctx, arg, true);
    if (!trajectory) return false;
    await StepInspectorPanel.show(ctx.extension, ctx.tracker, trajectory);
    return true;
  },
};
