import { errorMessage } from '../../errors';
import { depgpoInput, toDepgpoRecord } from '../../depgpo/trajectory';
import { computeDepgpo } from '../../depgpo/compute';
import type { RunContext, RunPhase } from '../context';

/**
 * Phase 5, credit: DepGPO's per-step factors from the steps' traces and the test run's trace. Only
 * after the task's tests scored the run (their trace is E); an add-on, so a failure is a warning.
 */
export const creditPhase: RunPhase = {
  name: 'credit',
  async run(ctx: RunContext): Promise<void> {
    if (!ctx.scoredByTests) return;
    ctx.progress({ type: 'phase', message: 'Computing DepGPO credit' });
    try {
      const input = { ...depgpoInput({ header: ctx.header, steps: ctx.steps }), ...(ctx.verifierTrace ? { verifier: ctx.verifierTrace } : {}) };
      const result = computeDepgpo(input);
      ctx.depgpo = toDepgpoRecord(result, input.commands);
      for (const m of result.warnings) ctx.warn(`DepGPO: ${m}`);
    } catch (err) {
      // Credit assignment is an add-on: the run and its reward stand without it.
      ctx.warn(`DepGPO could not be computed: ${errorMessage(err)}`);
    }
  },
};
