import { chmod, writeFile } from 'node:fs/promises';
import { Document } from 'yaml';
import type { Task } from '../model';
import { isPlainObject } from '../fields';

/** What the writers of every format share. */

/** The free-form metadata both formats keep (task.yaml's extra keys, task.toml's [metadata]). */
export function metadataOf(task: Task): Record<string, unknown> {
  return isPlainObject(task.extra.metadata) ? task.extra.metadata : {};
}

/** task.toml settings the Task model does not name (kept verbatim for a round trip). */
export function taskTomlOf(task: Task): Record<string, unknown> {
  return isPlainObject(task.extra.taskToml) ? task.extra.taskToml : {};
}

export async function writeExecutable(path: string, content: string | Buffer): Promise<void> {
  await writeFile(path, content);
  await chmod(path, 0o755);
}

/** solution.yaml text: the entries the task was read with, else one default entry per command. */
export function solutionYaml(task: Task): string {
  if (task.solution?.kind !== 'commands') return '';
  const entries = Array.isArray(task.extra.solutionYaml) && task.extra.solutionYaml.length === task.solution.commands.length
    ? task.extra.solutionYaml
    : task.solution.commands.map((command) => ({ command, min_timeout_sec: 0.1, block: true, append_enter: true }));
  return new Document(entries).toString({ lineWidth: 0 });
}
