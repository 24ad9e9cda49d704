import type { Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { RewardRecord, StepRecord } from '../trajectory/schema';
import { createProgressRecorder } from '../synth/progress';

/**
 * Reward shaping around the task's own verdict. The run's agent phase gives each hook every step
 * before it is written (a hook may annotate it, e.g. Φ), and its score phase passes the reward
 * the tests (and judge) gave through every hook in order. A hook that does not apply to a task is
 * a no-op, so the run always installs the whole list.
 */
export interface RewardHook {
  readonly name: string;
  /** Called with each new step before the trajectory writer appends it (the line is final then). */
  onStep?(step: StepRecord): Promise<void>;
  /** The shaped reward; return the input unchanged when the hook does not apply. */
  shape(reward: RewardRecord): Promise<RewardRecord>;
}

export interface RewardHookContext {
  sandbox: Sandbox;
  task: Task;
  /** A hook's own trouble (a grader that fails): reported, never fatal to the run. */
  onError: (message: string) => void;
}

/**
 * Tev progress-based reward shaping: Φ per step from the task's progress contract and PPRS on the
 * final reward, R = 1[pass] + λ·Φ(s_T) (synth/progress.ts). Tasks without a contract: no-op.
 */
export function pprsRewardHook(ctx: RewardHookContext): RewardHook {
  const recorder = createProgressRecorder(ctx.sandbox, ctx.task, { onError: ctx.onError });
  return { name: 'pprs', onStep: (step) => recorder.onStep(step), shape: (reward) => recorder.finish(reward) };
}

/** The hooks of a run, in the order they apply. To add one: write its factory here and list it. */
export const REWARD_HOOKS: ReadonlyArray<(ctx: RewardHookContext) => RewardHook> = [pprsRewardHook];

export function rewardHooksFor(ctx: RewardHookContext): RewardHook[] {
  return REWARD_HOOKS.map((make) => make(ctx));
}

/** The reward after every hook, in order. */
export async function shapeReward(hooks: readonly RewardHook[], reward: RewardRecord): Promise<RewardRecord> {
  let shaped = reward;
  for (const h of hooks) shaped = await h.shape(shaped);
  return shaped;
}
