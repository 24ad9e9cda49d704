import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError } from '../errors';
import type { ChatMessage } from '../model/types';
import type { Task } from '../tasks/model';

/** Bump when the prompt's meaning changes: the version is recorded in every trajectory header. */
export const SYSTEM_PROMPT_VERSION = 'v1';

/**
 * Prompt files are read at run time so they can be edited without a rebuild. From the sources
 * they sit in src/core/prompts; in the esbuild bundles scripts/build.mjs copies them to
 * dist/prompts, next to the bundle's __dirname.
 */
function promptPath(version: string): string {
  const file = `system-${version}.md`;
  const candidates = [join(__dirname, '..', 'prompts', file), join(__dirname, 'prompts', file)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new TbrlError('prompt-missing', `The system prompt ${file} was not found (looked in ${candidates.join(', ')}).`, 'Rebuild with `npm run build` (it copies src/core/prompts to dist/prompts).');
  }
  return found;
}

export function loadSystemPrompt(version = SYSTEM_PROMPT_VERSION): { version: string; text: string } {
  return { version, text: readFileSync(promptPath(version), 'utf8').trimEnd() };
}

/**
 * The first user message: the task statement, and what the agent cannot see for itself.
 * `previousAttempt` (Sequential Refine) is a summary of the last attempt on this task.
 */
export function taskMessage(task: Task, previousAttempt?: string): string {
  const lines = [
    'Here is your task.',
    '',
    '<task>',
    task.instruction.trim(),
    '</task>',
    '',
    `You have about ${Math.round(task.agentTimeoutSec / 60) || 1} minute(s). Start with planning (a todo list), then explore read-only before changing anything.`,
  ];
  if (previousAttempt) {
    lines.push('', 'An earlier attempt at this task did not fully succeed. Its summary follows; the container has been reset, so nothing it did is still there. Learn from it rather than repeating it.', '', '<previous_attempt>', previousAttempt.trim(), '</previous_attempt>');
  }
  return lines.join('\n');
}

export function initialMessages(systemPrompt: string, task: Task, previousAttempt?: string): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt },
    { role: 'user', content: taskMessage(task, previousAttempt) },
  ];
}
