import { filterRuns, type RunEntry, type TaskEntry } from '../discover';

/** What a training job is built from: task directories and trajectory files. */
export interface TrainingSelection {
  taskDirs: string[];
  trajectories: string[];
}

export interface PickItem {
  label: string;
  description: string;
  detail?: string;
  picked: boolean;
  /** The task dir or trajectory path this item stands for. */
  value: string;
}

/**
 * Quick-pick items for the trajectories: every run is listed, those matching the Runs view's filter
 * syntax come pre-picked, so the filter narrows the default without hiding the rest.
 */
export async function trajectoryItems(runs: RunEntry[], filter: string): Promise<PickItem[]> {
  const chosen = new Set((filter.trim() ? await filterRuns(runs, filter) : runs.filter((r) => r.steps !== undefined)).map((r) => r.trajectory));
  return runs.map((r) => ({
    label: r.taskId,
    description: `${r.startedAt.replace('T', ' ').slice(0, 19)} · ${r.steps === undefined ? 'unfinished' : `${r.pass ? 'pass' : 'fail'} · reward ${r.reward?.toFixed(3) ?? '-'}`}`,
    detail: r.trajectory,
    picked: chosen.has(r.trajectory),
    value: r.trajectory,
  }));
}

/** Task items; tasks that the chosen trajectories ran are pre-picked (their last path segment is the task id). */
export function taskItems(tasks: TaskEntry[], runs: RunEntry[], trajectories: string[]): PickItem[] {
  const chosen = new Set(trajectories);
  const ranTasks = new Set(runs.filter((r) => chosen.has(r.trajectory)).map((r) => r.taskId));
  return tasks.map((t) => ({ label: t.name, description: t.format, detail: t.dir, picked: ranTasks.has(lastSegment(t.dir)) || ranTasks.has(t.name), value: t.dir }));
}

function lastSegment(dir: string): string {
  return dir.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? dir;
}

/** Parses the overrides box: `key=value` separated by spaces or commas; empty means none. */
export function parseOverrides(text: string): string[] {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

export function selectionOf(picked: readonly PickItem[], kind: 'tasks' | 'trajectories', into: TrainingSelection): TrainingSelection {
  const values = picked.map((p) => p.value);
  return kind === 'tasks' ? { ...into, taskDirs: values } : { ...into, trajectories: values };
}
