/**
 * Run a parsed turn: its actions in order through the sandbox, each yielding one record with a
 * wrapped, bounded observation. Parse errors are records too (kind `parse_error`, observation
 * `<error>`), in their place in the turn, so the agent sees one observation per item it wrote.
 * Execution stops at `finish` or at a `bash` with `end_after_cmd_success` that succeeded.
 *
 * Failures of the sandbox itself (daemon gone, container removed, disk full) are not the
 * agent's doing and cannot be fixed by it: they reject the promise so the step loop can end
 * the run with the reason. Everything else becomes an observation.
 */
import type { ActionContext, ActionResult, ParsedAction, ParsedTurn } from './types';
import type { ActionRecord } from '../trajectory/schema';
import type { ActionTag } from './schema';
import { formatParseError } from './errors';
import { wrapBounded, byteLength } from './bound';
import { errorMessage } from '../errors';
import { takeStrayOutput, type Handler, type HandlerOutcome } from './handlers/common';
import { bashHandler } from './handlers/bash';
import { fileHandler } from './handlers/file';
import { searchHandler } from './handlers/search';
import { todoHandler } from './handlers/todo';
import { scratchpadHandler } from './handlers/scratchpad';
import { finishHandler } from './handlers/finish';

export const PARSE_ERROR_KIND = 'parse_error';

const HANDLERS: Record<ActionTag, Handler> = {
  bash: bashHandler,
  file: fileHandler,
  search: searchHandler,
  todo: todoHandler,
  scratchpad: scratchpadHandler,
  finish: finishHandler,
};

/** Error codes after which no further action can succeed in this sandbox. */
// TRACER_LOST: the agent stopped its tracer more often than it is restarted (trace/traced-sandbox.ts).
const FATAL_CODES = new Set(['DOCKER_DIED', 'DOCKER_UNAVAILABLE', 'CONTAINER_GONE', 'DISK_FULL', 'TRACER_LOST']);

export function isFatalSandboxError(err: unknown): boolean {
  return FATAL_CODES.has((err as { code?: string })?.code ?? '');
}

const OUTPUT_TAG: Record<ActionTag, string> = {
  bash: 'bash_output', file: 'file_output', search: 'search_output', todo: 'todo_output', scratchpad: 'scratchpad_output', finish: 'finish_output',
};

export interface TurnResult {
  results: ActionResult[];
  /** True when an action ended the episode (finish, or end_after_cmd_success that succeeded). */
  endsEpisode: boolean;
  /** True when the turn had items and every one was a parse error (three in a row end the run). */
  onlyErrors: boolean;
}

/** Run one action; sandbox-level failures propagate, everything else is an observation. */
export async function executeAction(action: ParsedAction, ctx: ActionContext): Promise<ActionResult> {
  const started = Date.now();
  let out: HandlerOutcome;
  try {
    const handler = HANDLERS[action.tag];
    if (!handler) throw new Error(`no handler for <${String(action.tag)}>`);
    out = await handler(action, ctx);
  } catch (err) {
    if (isFatalSandboxError(err)) throw err;
    const message = errorMessage(err).replace(/\n\s*Fix:[\s\S]*$/, '');
    out = { observation: wrapBounded(OUTPUT_TAG[action.tag] ?? 'error', `Error: the ${action.kind} action failed: ${message}`, ctx.maxObservationBytes), ok: false };
  }
  const stray = takeStrayOutput(ctx);
  if (stray) out = { ...out, observation: withBackgroundOutput(out.observation, stray, ctx.maxObservationBytes) };
  const record: ActionRecord = {
    kind: action.kind,
    input: action.body,
    observation: out.observation,
    ok: out.ok,
    durationMs: Date.now() - started,
  };
  if (out.exitCode !== undefined) record.exitCode = out.exitCode;
  if (out.timedOut !== undefined) record.timedOut = out.timedOut;
  if (out.trace) record.trace = out.trace;
  return out.endsEpisode ? { record, endsEpisode: true } : { record };
}

export async function executeTurn(turn: ParsedTurn, ctx: ActionContext): Promise<TurnResult> {
  const results: ActionResult[] = [];
  let endsEpisode = false;
  for (let i = 0; i < turn.items.length; i++) {
    const item = turn.items[i]!;
    if (!item.ok) {
      results.push({
        record: {
          kind: PARSE_ERROR_KIND,
          input: { code: item.error.code, tag: item.error.tag, excerpt: item.error.excerpt },
          observation: formatParseError(item.error, ctx.maxObservationBytes),
          ok: false,
          durationMs: 0,
        },
      });
      continue;
    }
    const result = await executeAction(item.action, ctx);
    results.push(result);
    if (result.endsEpisode) {
      endsEpisode = true;
      const skipped = turn.items.length - i - 1;
      if (skipped > 0) noteSkipped(result.record, skipped, ctx.maxObservationBytes);
      break;
    }
  }
  return { results, endsEpisode, onlyErrors: results.length > 0 && results.every((r) => r.record.kind === PARSE_ERROR_KIND) };
}

/** Background output picked up by a helper command, shown after the action's own output. */
function withBackgroundOutput(observation: string, stray: string, maxBytes: number): string {
  const room = maxBytes - byteLength(observation) - 1;
  if (room < 120) return observation;
  return `${observation}\n${wrapBounded('background_output', stray.replace(/\n+$/, ''), room)}`;
}

function noteSkipped(record: ActionRecord, skipped: number, maxBytes: number): void {
  const note = `\n[${skipped} later item${skipped === 1 ? '' : 's'} in this turn ${skipped === 1 ? 'was' : 'were'} not run: the episode ended here]`;
  if (byteLength(record.observation) + byteLength(note) <= maxBytes) record.observation += note;
}
