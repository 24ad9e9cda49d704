/** `<finish>`: the agent declares the task done; the executor stops the turn here. */
import type { FinishBody } from '../schema';
import { output, type Handler } from './common';

export const finishHandler: Handler = async (action, ctx) => {
  const { message } = action.body as unknown as FinishBody;
  return { ...output('finish_output', ctx, `Episode finished: ${message}`), endsEpisode: true };
};
