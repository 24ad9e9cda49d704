/** `<scratchpad>`: free-form notes the agent keeps for itself, recorded with every step. */
import type { AddNoteBody } from '../schema';
import { output, type Handler } from './common';

export const scratchpadHandler: Handler = async (action, ctx) => {
  const notes = ctx.state.scratchpad;
  if (action.kind === 'scratchpad.add_note') {
    notes.push((action.body as unknown as AddNoteBody).content);
    return output('scratchpad_output', ctx, `Note ${notes.length} added (${notes.length} in total).`);
  }
  if (notes.length === 0) return output('scratchpad_output', ctx, 'No notes yet.');
  return output('scratchpad_output', ctx, notes.map((n, i) => `Note ${i + 1}:\n${n}`).join('\n\n'));
};
