import { parseTurn } from '../actions/parser';
import { actionKey } from './candidates';

/** A candidate "parses" when it holds at least one action and no malformed one. */
export function candidateParses(text: string): boolean {
  const turn = parseTurn(text);
  return turn.items.length > 0 && turn.items.every((i) => i.ok);
}

/**
 * What a turn would execute, independent of YAML spelling (`cmd: ls` and `cmd: "ls"` are the
 * same action); text identity for turns that do not parse.
 */
export function canonicalActionKey(text: string): string {
  const turn = parseTurn(text);
  if (turn.items.length === 0 || !turn.items.every((i) => i.ok)) return `text:${actionKey(text)}`;
  return `actions:${JSON.stringify(turn.items.map((i) => (i.ok ? [i.action.kind, i.action.body] : null)))}`;
}
