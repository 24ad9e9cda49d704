import { depgpoOfTrajectory, isPassing } from './trajectory';
import type { TrajectoryLike } from './trajectory';
import { onPathFraction } from './view';

/**
 * The pilot statistic of the DepGPO paper: over passing trajectories, the fraction of commands that
 * lie on a dependency path to E (graph reachability through file and stdout edges into a command
 * whose lines are still in an inspected file, or whose port/process was checked). The paper reports
 * medians of 0.57 (all Terminal-Bench 2.0 reference solutions) and 0.18 (those with 5+ commands).
 */
export interface PilotStats {
  /** Median over passing, traced trajectories with at least one command. */
  median: number | null;
  count: number;
  /** Median over those with 5 or more commands. */
  median5: number | null;
  count5: number;
  perTrajectory: Array<{ path: string; taskId: string; commands: number; onPath: number; fraction: number }>;
  skipped: Array<{ path: string; reason: string }>;
}

export const LONG_TRAJECTORY_COMMANDS = 5;

export function pilotStats(trajectories: Array<TrajectoryLike & { path: string }>): PilotStats {
  const perTrajectory: PilotStats['perTrajectory'] = [];
  const skipped: PilotStats['skipped'] = [];
  for (const t of trajectories) {
    if (!isPassing(t)) {
      skipped.push({ path: t.path, reason: t.footer?.reward ? `not passing (reward ${t.footer.reward.total})` : 'no reward' });
      continue;
    }
    const { input, result } = depgpoOfTrajectory(t);
    const n = input.commands.length;
    if (!result.traced) {
      skipped.push({ path: t.path, reason: `no usable trace (${result.fallback})` });
      continue;
    }
    const fraction = onPathFraction(result, n);
    if (fraction === null) {
      skipped.push({ path: t.path, reason: 'no commands' });
      continue;
    }
    perTrajectory.push({ path: t.path, taskId: t.header.task?.id ?? '', commands: n, onPath: Math.round(fraction * n), fraction });
  }
  const all = perTrajectory.map((p) => p.fraction);
  const long = perTrajectory.filter((p) => p.commands >= LONG_TRAJECTORY_COMMANDS).map((p) => p.fraction);
  return { median: median(all), count: all.length, median5: median(long), count5: long.length, perTrajectory, skipped };
}

export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
