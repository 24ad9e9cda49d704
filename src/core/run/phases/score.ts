import { combineReward, computeReward } from '../../reward/index';
import { shapeReward } from '../../reward/hooks';
import { verifierTestOptions, withVerifierSandbox } from '../task-sandbox';
import { interrupted, type RunContext, type RunPhase } from '../context';

/**
 * Phase 4, score: the run's reward, from the caller's `scoreRun`, from Harbor's verified [[steps]],
 * or from the task's tests (+ judge) in the verifier's sandbox, shaped by the reward hooks (PPRS
 * for Tev tasks). Skipped with `skipReward` and after an interrupt.
 */
export const scorePhase: RunPhase = {
  name: 'score',
  async run(ctx: RunContext): Promise<void> {
    const { options, task, fork, config } = ctx;
    const loop = ctx.loop!;
    if (options.skipReward || interrupted(ctx)) return;
    if (options.scoreRun) {
      ctx.progress({ type: 'phase', message: 'Scoring the run' });
      ctx.reward = await options.scoreRun(ctx.sandbox!, options.signal);
      return;
    }
    if (task.harbor?.steps && !fork) {
      ctx.reward = combineReward(ctx.stepsTestRun ?? { error: { kind: 'sandbox-error', message: loop.endMessage ?? 'no step was verified', logTail: '' } }, undefined);
      return;
    }
    ctx.progress({ type: 'phase', message: config.judge ? `Running the tests and the judge (${config.judge.model})` : 'Running the tests' });
    const judge = config.judge ? { backend: { kind: 'openai' as const, ...config.judge } } : undefined;
    const r = await withVerifierSandbox(task, ctx.sandbox!, ctx.provider!, ctx.runId, (verifierSandbox) =>
      computeReward({ task, sandbox: verifierSandbox, trajectoryLines: [ctx.header, ...ctx.steps], signal: options.signal, tests: verifierTestOptions(task, ctx.env), ...(judge ? { judge } : {}) }), ctx.env);
    ctx.reward = await shapeReward(ctx.rewardHooks, r.reward);
    ctx.verifierTrace = r.verifierTrace;
    ctx.scoredByTests = true;
    if (ctx.reward.testError) ctx.warn(`The tests could not be scored (${ctx.reward.testError.kind}): ${ctx.reward.testError.message}`);
  },
};
