import { parseTurn } from '../actions/parser';

/** A candidate "parses" when it holds at least one action and no malformed one. */
export function candidateParses(text: string): boolean {
  const turn = parseTurn(text);
  return turn.items.length > 0 && turn.items.every((i) => i.ok);
}
