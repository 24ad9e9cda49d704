import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { DETECTION_ORDER, FORMAT_FLAGS, TASK_FORMATS, type WritableFormat } from './formats';
import { confinedPath, confineTask, type ConfineOptions } from './confine';

/** Files any format's reader reads (and might quote in a parse error): confined before any is opened. */
const READ_AT_LOAD = [...new Set(TASK_FORMATS.flatMap((f) => f.readsAtLoad))];

/** Which on-disk format a task directory is in (see DETECTION_ORDER), or undefined when it is in none. */
export async function detectTaskFormat(dir: string): Promise<WritableFormat | undefined> {
  for (const format of DETECTION_ORDER) if (await format.detect(dir)) return format.id;
  return undefined;
}

/** Load a task directory in any registered format (formats/index.ts). */
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
    throw new TbrlError('TASK_NOT_FOUND', `${abs}: no such task directory`, `Pass the directory that holds ${TASK_FORMATS.map((f) => `${f.taskFile} (${f.label})`).join(' or ')}, e.g. \`tbrl validate examples/hello-world\`.`);
  }
  for (const name of READ_AT_LOAD) await confinedPath(abs, join(abs, name), { file: join(abs, name), key: 'a task file' });
  for (const format of DETECTION_ORDER) if (await format.detect(abs)) return format.read(abs);
  throw new TbrlError(
    'TASK_UNKNOWN_FORMAT',
    `${abs}: neither ${TASK_FORMATS.map((f) => `${f.taskFile} (${f.fullName})`).join(' nor ')} found`,
    `Point at a task directory, or create one with \`tbrl new-task <dir> --format ${FORMAT_FLAGS.join('|')}\`.`,
  );
}
