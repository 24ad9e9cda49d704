import { runAgentLoop, type LoopOptions } from '../../agent/loop';
import { createOraclePolicy } from '../../agent/oracle';
import { conversationThrough } from '../fork';
import { runStepsWithAgent } from '../harbor-steps';
import type { RunContext, RunPhase } from '../context';

/**
 * Phase 3, agent: the step loop (or Harbor's [[steps]], each with its own verifier), every step
 * passed through the reward hooks and appended to the trajectory as it completes.
 */
export const agentPhase: RunPhase = {
  name: 'agent',
  async run(ctx: RunContext): Promise<void> {
    const { options, config, task, fork, policy, prompt, previousAttempt } = ctx;
    const sandbox = ctx.sandbox!;
    const writer = ctx.writer!;
    ctx.progress({ type: 'phase', message: `Running ${policy.description} (max ${config.maxSteps} steps, ${ctx.maxTimeSec} s${config.maxTokens ? `, ${config.maxTokens} tokens` : ''})` });
    const loopOptions: LoopOptions = {
      policy,
      sandbox,
      task,
      systemPrompt: prompt.text,
      limits: { maxSteps: Math.max(0, config.maxSteps - (fork?.copied.length ?? 0)), maxTimeMs: ctx.maxTimeSec * 1000, maxTokens: config.maxTokens },
      trace: options.trace ?? true,
      checkpoint: options.checkpoint,
      previousAttempt,
      ...(fork ? { resume: { messages: conversationThrough(prompt.text, task, fork.copied, previousAttempt), state: fork.state, nextStep: fork.copied.length } } : {}),
      beforeExecute: options.beforeExecute,
      signal: options.signal,
      onStep: async (s) => {
        // Φ must be on the step before it is written: the line is final once appended.
        for (const h of ctx.rewardHooks) await h.onStep?.(s);
        writer.appendStep(s);
        ctx.steps.push(s);
      },
      onEvent: (e) => {
        if (e.type === 'step-start') ctx.progress({ type: 'step-start', step: e.step });
        if (e.type === 'step-done') ctx.progress({ type: 'step', step: e.step });
      },
    };
    // Harbor [[steps]]: each step's agent turn and verifier in order (harbor-steps.ts); the steps' reward is the run's.
    if (task.harbor?.steps && !fork) {
      const ran = await runStepsWithAgent({ task, sandbox, provider: ctx.provider!, runId: ctx.runId, loopOptions, hostEnv: ctx.env, ...(ctx.header.policy.kind === 'oracle' ? { oracleFor: createOraclePolicy } : {}), onStepStart: (s) => ctx.progress({ type: 'info', message: `Step ${s.name}` }) });
      ctx.loop = ran.loop;
      ctx.stepsTestRun = ran.testRun;
      if (ran.stoppedAt) ctx.warn(`Stopped after step ${ran.stoppedAt}.`);
    } else ctx.loop = await runAgentLoop(loopOptions);

    const kept = ctx.steps.filter((s) => s.checkpoint && !fork?.copied.includes(s)).length;
    if (kept > 0) ctx.progress({ type: 'info', message: `${kept} checkpoint image(s) kept for fork / step back; \`tbrl gc\` removes them once this process has exited.` });
  },
};
