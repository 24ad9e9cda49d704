import type { ChatMessage } from '../model/types';
import { stripThink } from './candidates';

const OBSERVATION_CHARS = 4000;
const CANDIDATE_CHARS = 6000;

/** Head and tail survive: commands print their errors last, and what ran first matters too. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.4);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} characters clipped …]\n${text.slice(text.length - tail)}`;
}

export const label = (i: number) => String.fromCharCode(65 + i);

/**
 * The history as the verifier sees it: the agent's past actions (reasoning stripped) and their
 * observations, newest kept within `maxChars`, with a note saying how many older turns were left out.
 */
export function renderHistory(messages: ChatMessage[], maxChars: number): { instruction: string; history: string } {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  const instruction = firstUser >= 0 ? messages[firstUser].content : '';
  const blocks: string[] = [];
  let turn = 0;
  for (let i = firstUser + 1; i < messages.length && firstUser >= 0; i++) {
    const m = messages[i];
    if (m.role === 'assistant') {
      turn++;
      blocks.push(`## Turn ${turn}: agent\n${clip(stripThink(m.content), CANDIDATE_CHARS)}`);
    } else if (m.role === 'user') {
      blocks.push(`## Turn ${turn}: observation\n${clip(m.content, OBSERVATION_CHARS)}`);
    }
  }
  const kept: string[] = [];
  let used = 0;
  for (let i = blocks.length - 1; i >= 0; i--) {
    if (used + blocks[i].length > maxChars && kept.length > 0) {
      kept.unshift(`[${i + 1} earlier history block(s) left out to fit the verifier's context]`);
      break;
    }
    kept.unshift(blocks[i]);
    used += blocks[i].length;
  }
  return { instruction, history: kept.length ? kept.join('\n\n') : '(no actions yet: this is the first turn)' };
}

export function renderCandidates(texts: string[]): string {
  return texts.map((t, i) => `## Candidate ${label(i)}\n${clip(stripThink(t), CANDIDATE_CHARS) || '(empty)'}`).join('\n\n');
}

export function renderOne(text: string): string {
  return clip(stripThink(text), CANDIDATE_CHARS) || '(empty)';
}
