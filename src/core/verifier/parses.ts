import { parseTurn } from '../actions/parser';
import type { ParsedTurn } from '../actions/types';
import { actionKey } from './candidates';

/** A turn "parses" when it holds at least one action and no malformed one. */
export function turnParses(turn: ParsedTurn): boolean {
  return turn.items.length > 0 && turn.items.every((i) => i.ok);
}

/** Whether a candidate's text parses (for callers that have not parsed it already). */
export function candidateParses(text: string): boolean {
  return turnParses(parseTurn(text));
}

/**
 * What a turn would execute, independent of YAML spelling (`cmd: ls` and `cmd: "ls"` are the
 * same action); text identity for turns that do not parse. `turn` is the text's parse when the
 * caller already has it.
 */
export function canonicalActionKey(text: string, turn: ParsedTurn = parseTurn(text)): string {
  if (!turnParses(turn)) return `text:${actionKey(text)}`;
  return `actions:${JSON.stringify(turn.items.map((i) => (i.ok ? [i.action.kind, i.action.body] : null)))}`;
}
