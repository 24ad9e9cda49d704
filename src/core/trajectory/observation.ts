import type { StepRecord } from './schema';

/**
 * The text the agent is shown after a step: every action's observation in order, then the parse
 * errors. The step loop builds the next user message with this very function, so exports and
 * replays rebuild the conversation the policy actually saw.
 */
export function stepObservation(step: Pick<StepRecord, 'actions' | 'parseErrors'>): string {
  const parts = step.actions.map((a) => a.observation);
  for (const e of step.parseErrors) parts.push(e.startsWith('<') ? e : `<error>\n${e}\n</error>`);
  return parts.join('\n\n');
}
