import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { Task, TaskFormat } from './model';
import { isHarborDir, readHarbor } from './harbor';
import { isTerminalBenchDir, readTerminalBench } from './terminal-bench';
import { confinedPath, confineTask, type ConfineOptions } from './confine';

/** Files the loaders read (and might quote in a parse error): confined before any is opened. */
const READ_AT_LOAD = ['task.yaml', 'task.toml', 'instruction.md', 'docker-compose.yaml', 'run-tests.sh', 'solution.yaml', 'test_weights.json', 'tests/test_weights.json', 'tests/test.sh', 'tests', 'solution', 'solution.sh', 'solution/solve.sh', 'environment', 'Dockerfile'];

/** Which on-disk format a task directory is in, or undefined when it is neither. */
export async function detectTaskFormat(dir: string): Promise<Exclude<TaskFormat, 'devcontainer'> | undefined> {
  if (await isHarborDir(dir)) return 'harbor';
  if (await isTerminalBenchDir(dir)) return 'terminal-bench';
  return undefined;
}

/** Load a Terminal-Bench 1.x (task.yaml) or Harbor (task.toml) task directory. */
export async function loadTask(dir: string, options: ConfineOptions = {}): Promise<Task> {
  const task = await loadUnconfined(dir);
  const allowed = await confineTask(task, options);
  if (allowed.length) task.extra.allowedPrivileges = allowed;
  return task;
}

async function loadUnconfined(dir: string): Promise<Task> {
  const abs = resolve(dir);
  const info = await stat(abs).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new TbrlError('TASK_NOT_FOUND', `${abs}: no such task directory`, 'Pass the directory that holds task.yaml (Terminal-Bench) or task.toml (Harbor), e.g. `tbrl validate examples/hello-world`.');
  }
  for (const name of READ_AT_LOAD) await confinedPath(abs, join(abs, name), { file: join(abs, name), key: 'a task file' });
  const format = await detectTaskFormat(abs);
  if (format === 'harbor') return readHarbor(abs);
  if (format === 'terminal-bench') return readTerminalBench(abs);
  throw new TbrlError(
    'TASK_UNKNOWN_FORMAT',
    `${abs}: neither task.yaml (Terminal-Bench 1.x) nor task.toml (Harbor) found`,
    'Point at a task directory, or create one with `tbrl new-task <dir> --format tb|harbor`.',
  );
}
