import type { ChatMessage } from './types';
import { TbrlError } from '../errors';

/**
 * Token estimate without a tokenizer: ~4 characters per token for English and code, plus a few
 * tokens of chat-template overhead per message. Deliberately rough — we only need to know when a
 * conversation is about to overflow, and the server's usage numbers are what gets recorded.
 */
export const CHARS_PER_TOKEN = 4;
const MESSAGE_OVERHEAD_TOKENS = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

export function estimateMessagesTokens(messages: ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + estimateTokens(m.content) + MESSAGE_OVERHEAD_TOKENS, 0);
}

export const ELISION_PREFIX = '[elided observation';

export function elisionMarker(turn: number, chars: number): string {
  return `${ELISION_PREFIX} of turn ${turn}: ${chars} characters removed to fit the model's context window. Re-run the command or re-read the file if you still need it.]`;
}

export interface FittedContext {
  messages: ChatMessage[];
  /** Indices (into the input) of observations replaced by a marker. */
  elided: number[];
  estimatedTokens: number;
}

/**
 * Makes the conversation fit `contextTokens - reserveTokens` by replacing the OLDEST observations
 * (user messages after the first one, which is the task instruction) with a marker that names the
 * turn. The system prompt, the instruction, every assistant turn and the latest observation are
 * kept: if they alone do not fit, that is an error the user must fix, not something to hide.
 */
export function fitContext(messages: ChatMessage[], contextTokens: number | undefined, reserveTokens = 0): FittedContext {
  const total = estimateMessagesTokens(messages);
  if (!contextTokens || total + reserveTokens <= contextTokens) return { messages, elided: [], estimatedTokens: total };

  const budget = contextTokens - reserveTokens;
  const firstUser = messages.findIndex((m) => m.role === 'user');
  let lastUser = -1;
  messages.forEach((m, i) => { if (m.role === 'user') lastUser = i; });

  const out = messages.map((m) => ({ ...m }));
  const elided: number[] = [];
  let tokens = total;
  let turn = 0;
  for (let i = 0; i < messages.length && tokens > budget; i++) {
    if (messages[i].role === 'assistant') turn++;
    if (messages[i].role !== 'user' || i === firstUser || i === lastUser) continue;
    if (messages[i].content.startsWith(ELISION_PREFIX)) continue;
    const marker = elisionMarker(turn, messages[i].content.length);
    const saved = estimateTokens(messages[i].content) - estimateTokens(marker);
    if (saved <= 0) continue;
    out[i] = { role: 'user', content: marker };
    elided.push(i);
    tokens -= saved;
  }
  if (tokens > budget) {
    throw new TbrlError(
      'context-overflow',
      `The conversation needs about ${tokens} tokens even with ${elided.length} old observation(s) elided, but the model's context is ${contextTokens} tokens (${reserveTokens} reserved for the answer).`,
      'Raise contextTokens to the model\'s real window, lower maxTokens, or shorten the system prompt/instruction; the latest observation is never elided.',
    );
  }
  return { messages: out, elided, estimatedTokens: tokens };
}
