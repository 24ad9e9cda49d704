import { basename } from 'node:path';
import type { RunEntry, TaskEntry } from '../discover';
import type { ValidationRecord } from '../../core/tasks/validation-record';

/** What the Tasks view says about one task: its last validation and the reward of its latest finished run. */
export interface TaskStatus {
  state: 'valid' | 'invalid' | 'unvalidated';
  description: string;
  tooltip: string[];
}

const score = (s: { status: string; score?: number }): string => (s.score === undefined ? s.status : `${+s.score.toFixed(3)}`);

/**
 * A run belongs to a task when its header names the task's directory; runs recorded on another
 * machine (another absolute path) match by task id, which is the directory's name.
 */
export function runsOfTask(task: TaskEntry, runs: readonly RunEntry[]): RunEntry[] {
  const byDir = runs.filter((r) => r.taskDir === task.dir);
  return byDir.length ? byDir : runs.filter((r) => r.taskDir !== task.dir && r.taskId === basename(task.dir));
}

/** `runs` newest first, as findRuns returns them. */
export function taskStatus(task: TaskEntry, validation: ValidationRecord | undefined, runs: readonly RunEntry[]): TaskStatus {
  const mine = runsOfTask(task, runs);
  const finished = mine.filter((r) => r.reward !== undefined);
  const last = finished[0];
  const parts: string[] = [task.format];
  const tooltip: string[] = [task.dir];
  if (validation) {
    parts.push(validation.valid ? 'valid' : 'INVALID');
    tooltip.push(`Validated ${validation.at.replace('T', ' ').slice(0, 19)}: ${validation.valid ? 'valid' : 'INVALID'} (oracle ${score(validation.oracle)}, empty agent ${score(validation.empty)})`);
    for (const p of validation.problems) tooltip.push(`  ${p}`);
  } else {
    tooltip.push('Not validated yet: run "TBRL: Validate Task" (or tbrl validate).');
  }
  if (last) {
    parts.push(`reward ${last.reward!.toFixed(3)}`);
    tooltip.push(`Last run ${last.startedAt.replace('T', ' ').slice(0, 19)}: reward ${last.reward!.toFixed(3)} (${last.pass ? 'pass' : 'fail'}, ${last.policy}); ${finished.length} finished run(s) of ${mine.length}`);
  } else if (mine.length) {
    tooltip.push(`${mine.length} run(s), none finished`);
  }
  return { state: validation ? (validation.valid ? 'valid' : 'invalid') : 'unvalidated', description: parts.join(' · '), tooltip };
}
