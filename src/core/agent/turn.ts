import { parseTurn } from '../actions/parser';
import { executeTurn, PARSE_ERROR_KIND } from '../actions/execute';
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

export function parseAgentTurn(text: string): ParsedTurn {
  return parseTurn(text);
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
