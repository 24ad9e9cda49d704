import { groupAdvantages, stepAdvantages } from './factors';
import { depgpoOfTrajectory, trajectoryReward } from './trajectory';
import type { TrajectoryLike } from './trajectory';
import { DEFAULT_BETA } from './compute';
import { isMasked, outcomeOf } from '../run/outcome';

/**
 * Per-step advantages for training (`tbrl credit -o`). One entry per trajectory with a reward;
 * `steps[k].advantage` is Â_t = (f_t / Z) · Â_i for the step record whose `index` is given.
 */
export interface AdvantageExport {
  schema: 'tbrl.advantages/1';
  groupBy: GroupBy;
  normalizeStd: boolean;
  beta: number;
  groups: Array<{ key: string; size: number; mean: number; std: number; rewards: number[] }>;
  trajectories: TrajectoryCredit[];
  /** Trajectories left out, and why (no footer, no reward, an infra outcome that is masked). */
  skipped: Array<{ path: string; reason: string }>;
}

export interface TrajectoryCredit {
  path: string;
  runId: string;
  taskId: string;
  group: string;
  reward: number;
  groupAdvantage: number;
  z: number;
  fallback?: string;
  steps: Array<{ index: number; tokens: number; score: number; factor: number; advantage: number }>;
}

export type GroupBy = 'task' | 'all';

export interface CreditOptions {
  groupBy?: GroupBy;
  normalizeStd?: boolean;
  beta?: number;
}

export function creditForGroup(trajectories: Array<TrajectoryLike & { path: string }>, options: CreditOptions = {}): AdvantageExport {
  const groupBy = options.groupBy ?? 'task';
  const normalizeStd = options.normalizeStd ?? true;
  const beta = options.beta ?? DEFAULT_BETA;
  const skipped: AdvantageExport['skipped'] = [];
  const groups = new Map<string, Array<TrajectoryLike & { path: string; reward: number }>>();
  for (const t of trajectories) {
    // Infra failures (verifier crash, lost container, model endpoint down) carry no reward of the agent's.
    const outcome = t.footer ? outcomeOf(t.footer) : undefined;
    if (outcome && isMasked(outcome)) {
      skipped.push({ path: t.path, reason: `masked ${outcome.class}${outcome.cause ? `: ${outcome.cause}` : ''}` });
      continue;
    }
    const reward = trajectoryReward(t);
    if (reward === undefined) {
      skipped.push({ path: t.path, reason: t.footer ? 'the run has no reward (the verifier did not run or failed)' : 'no footer: the run was interrupted' });
      continue;
    }
    const key = groupBy === 'task' ? t.header.task?.id ?? '(unknown task)' : 'all';
    const list = groups.get(key) ?? [];
    list.push({ ...t, reward });
    groups.set(key, list);
  }

  const out: AdvantageExport = { schema: 'tbrl.advantages/1', groupBy, normalizeStd, beta, groups: [], trajectories: [], skipped };
  for (const [key, members] of groups) {
    const rewards = members.map((m) => m.reward);
    const adv = groupAdvantages(rewards, { normalizeStd });
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const std = rewards.length > 1 ? Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (rewards.length - 1)) : 0;
    out.groups.push({ key, size: members.length, mean, std, rewards });
    members.forEach((t, i) => {
      const { input, result } = depgpoOfTrajectory(t, beta);
      const perStep = stepAdvantages(result.factors, result.z, adv[i]);
      out.trajectories.push({
        path: t.path,
        runId: t.header.runId,
        taskId: t.header.task?.id ?? '',
        group: key,
        reward: t.reward,
        groupAdvantage: adv[i],
        z: result.z,
        ...(result.fallback ? { fallback: result.fallback } : {}),
        steps: result.factors.map((factor, k) => ({
          index: t.steps[k]?.index ?? k,
          tokens: input.stepTokens[k] ?? 0,
          score: result.stepScores[k],
          factor,
          advantage: perStep[k],
        })),
      });
    });
  }
  return out;
}
