import { TbrlError } from '../../errors';
import { HARBOR } from './harbor';
import { TERMINAL_BENCH } from './terminal-bench';
import type { TaskFormatAdapter } from './types';

export type { TaskFormatAdapter } from './types';
export type { ScaffoldParts } from './types';

/**
 * The task-format registry: a new format is one file in this folder (an adapter, see types.ts) and
 * one line here. Listings (usage text, pickers, messages) follow this order.
 */
export const TASK_FORMATS = [
  TERMINAL_BENCH,
  HARBOR,
] as const;

/**
 * The order in which a directory's format is detected: last registered first, so a later format
 * whose directory also holds an earlier one's file wins (task.toml beside a task.yaml is Harbor).
 */
export const DETECTION_ORDER: readonly TaskFormatAdapter<WritableFormat>[] = [...TASK_FORMATS].reverse();

/** The formats tasks are read from and written in (`Task.format` also has `devcontainer`, which has no files). */
export type WritableFormat = (typeof TASK_FORMATS)[number]['id'];

export const WRITABLE_FORMATS: readonly WritableFormat[] = TASK_FORMATS.map((f) => f.id);

/** The format used when none is asked for (`tbrl new-task`, saving a workspace run). */
export const DEFAULT_TASK_FORMAT: WritableFormat = 'terminal-bench';

/** The adapter for a `Task.format`, or undefined for a format without files (a devcontainer workspace). */
export function taskFormat(id: string): TaskFormatAdapter<WritableFormat> | undefined {
  return TASK_FORMATS.find((f) => f.id === id);
}

/** The adapter for a format that must exist (a writer's target). */
export function requireTaskFormat(id: string): TaskFormatAdapter<WritableFormat> {
  const format = taskFormat(id);
  if (!format) throw new TbrlError('TASK_UNKNOWN_FORMAT', `unknown task format "${id}"`, `Use one of: ${WRITABLE_FORMATS.join(', ')}.`);
  return format;
}

/** A `--format` value (the id or an alias such as `tb`), or undefined when it names no format. */
export function formatFromFlag(value: unknown): WritableFormat | undefined {
  return TASK_FORMATS.find((f) => f.id === value || f.aliases.includes(value as string))?.id;
}

/** The short `--format` spelling of each format (`tb`, `harbor`), in registry order. */
export const FORMAT_FLAGS: readonly string[] = TASK_FORMATS.map((f) => f.aliases[0] ?? f.id);

/** `--format` choices for a sentence: "tb or harbor". */
export function formatFlagsSentence(): string {
  return FORMAT_FLAGS.length <= 1 ? FORMAT_FLAGS.join('') : `${FORMAT_FLAGS.slice(0, -1).join(', ')} or ${FORMAT_FLAGS[FORMAT_FLAGS.length - 1]}`;
}

/** The format whose task file is among `names` (a directory listing), in detection order. */
export function formatOfListing(names: ReadonlySet<string>): WritableFormat | undefined {
  return DETECTION_ORDER.find((f) => names.has(f.taskFile))?.id;
}
