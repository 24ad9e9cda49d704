import type { StepRecord } from './schema';

/**
 * The text the agent is shown after a step: every item's observation in the order the turn had
 * them (parse errors are records of kind `parse_error` among the actions), then any parse error
 * not already among them (older or hand-written trajectories). The step loop builds the next user
 * message with this very function, so exports and replays rebuild the conversation the policy saw.
 */
export function stepObservation(step: Pick<StepRecord, 'actions' | 'parseErrors'>): string {
  const parts = step.actions.map((a) => a.observation);
  const shown = new Set(parts);
  for (const e of step.parseErrors) {
    if (shown.has(e)) continue;
    parts.push(e.startsWith('<') ? e : `<error>\n${e}\n</error>`);
  }
  return parts.join('\n\n');
}
