import { mkdir, readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { requireTaskFormat, type WritableFormat } from './formats';

export type { WritableFormat } from './formats';
// The renderers live with their formats; re-exported for the callers that render one file.
export { renderTaskYaml } from './formats/terminal-bench';
export { renderTaskToml, weightedRewardTestSh } from './formats/harbor';

export interface WriteResult {
  dir: string;
  /** What the target format cannot carry, or carries only for tbrl (one sentence each). */
  warnings: string[];
}

/**
 * Write `task` as a task directory in `format` at `outDir` (a new or empty directory). Files the
 * task's directory holds beyond the config (build context, tests, solution) are copied across.
 */
export async function writeTask(task: Task, outDir: string, format: WritableFormat): Promise<WriteResult> {
  const target = requireTaskFormat(format);
  const dir = resolve(outDir);
  if (dir === resolve(task.dir)) {
    throw new TbrlError('TASK_WRITE_IN_PLACE', `${dir}: refusing to write a task over its own source directory`, 'Write to a new directory, then replace the old one if the result is what you want.');
  }
  const existing = await readdir(dir).catch(() => [] as string[]);
  if (existing.length > 0) {
    throw new TbrlError('TASK_WRITE_NOT_EMPTY', `${dir}: directory is not empty`, 'Choose a new output directory (tasks are never merged into existing files).');
  }
  await mkdir(dir, { recursive: true });
  const warnings: string[] = [];
  await target.write(task, dir, warnings);
  return { dir, warnings };
}
