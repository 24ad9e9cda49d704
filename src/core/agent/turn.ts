import { parseTurn } from '../actions/parser';
import { executeTurn, PARSE_ERROR_KIND } from '../actions/execute';
import { makeParseError } from '../actions/errors';
import { ACTION_TAGS } from '../actions/schema';
import type { ActionContext, ParsedTurn } from '../actions/types';
import type { ActionRecord } from '../trajectory/schema';

/** What one executed turn contributes to its StepRecord and to the loop's end conditions. */
export interface ExecutedTurn {
  /** Every item of the turn in order, parse errors included (kind `parse_error`), as the agent saw them. */
  actions: ActionRecord[];
  /** The parse errors' observations, for readers that only want the errors. */
  parseErrors: string[];
  endsEpisode: boolean;
  /** The turn had items and every one was a parse error. */
  onlyErrors: boolean;
  /** `finish`'s message, when the turn finished. */
  finishMessage?: string;
}

/**
 * The turn as the loop runs it. A turn without a single action tag (prose, an empty answer, a
 * bare command) becomes one error item, so the agent reads what it wrote and a correct example
 * on its next turn, like any other parse error, instead of the episode ending unexplained.
 */
export function parseAgentTurn(text: string): ParsedTurn {
  const turn = parseTurn(text);
  return turn.items.length > 0 ? turn : { items: [{ ok: false, error: noActionError(text) }] };
}

export function noActionError(text: string) {
  const tags = ACTION_TAGS.map((t) => `<${t}>`).join(', ');
  const empty = text.trim().length === 0;
  return makeParseError({
    code: 'no-action',
    kind: 'bash',
    problem: `${empty ? 'Your turn was empty' : 'Your turn contained no action'}, so nothing was run. Every turn must contain at least one action in one of the tags ${tags}, with a YAML body; write <finish> when the task is done.`,
    excerpt: empty ? '' : text,
  });
}

export async function runAgentTurn(turn: ParsedTurn, ctx: ActionContext): Promise<ExecutedTurn> {
  const result = await executeTurn(turn, ctx);
  const actions = result.results.map((r) => r.record);
  const finish = actions.find((a) => a.kind === 'finish');
  const message = finish && typeof finish.input.message === 'string' ? finish.input.message : undefined;
  return {
    actions,
    parseErrors: actions.filter((a) => a.kind === PARSE_ERROR_KIND).map((a) => a.observation),
    endsEpisode: result.endsEpisode,
    onlyErrors: result.onlyErrors,
    ...(message !== undefined ? { finishMessage: message } : {}),
  };
}
