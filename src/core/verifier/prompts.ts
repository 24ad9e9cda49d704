import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError } from '../errors';
import type { ChatMessage } from '../model/types';

export const VERIFIER_PROMPT_VERSION = 'v1';

const SPLIT = /^===USER===$/m;
const cache = new Map<string, { system: string; user: string }>();

/**
 * Verifier prompts live in src/core/prompts/verifier-<name>-<version>.md (copied to dist/prompts
 * by the build) so they can be read, diffed and versioned like data: a system part, a line
 * `===USER===`, and a user template with {{placeholders}}. `name` is a registered mode's `prompt`
 * (modes/), or `trajectory` for the attempt-level verifier (attempts.ts).
 */
export function loadVerifierPrompt(name: string, version = VERIFIER_PROMPT_VERSION): { system: string; user: string } {
  const file = `verifier-${name}-${version}.md`;
  const hit = cache.get(file);
  if (hit) return hit;
  const candidates = [join(__dirname, '..', 'prompts', file), join(__dirname, 'prompts', file)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new TbrlError('prompt-missing', `The verifier prompt ${file} was not found (looked in ${candidates.join(', ')}).`,
      'Rebuild with `npm run build` (it copies src/core/prompts to dist/prompts), or pick an existing promptVersion.');
  }
  const text = readFileSync(found, 'utf8');
  const [system, user] = text.split(SPLIT);
  if (user === undefined) throw new TbrlError('prompt-invalid', `The verifier prompt ${found} has no "===USER===" line.`, 'Separate the system part from the user template with a line ===USER===.');
  const prompt = { system: system.trim(), user: user.trim() };
  cache.set(file, prompt);
  return prompt;
}

/** Single pass, so a candidate that happens to contain "{{b}}" is never substituted twice. */
export function renderPrompt(name: string, vars: Record<string, string>, version?: string): ChatMessage[] {
  const p = loadVerifierPrompt(name, version);
  const user = p.user.replace(/\{\{(\w+)\}\}/g, (m, k: string) => (k in vars ? vars[k] : m));
  return [{ role: 'system', content: p.system }, { role: 'user', content: user }];
}
