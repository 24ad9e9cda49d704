import type { BashBody } from '../schema';
import type { Handler } from './common';
import { commandOutputCap, output, plural } from './common';

const MAX_TIMER_MS = 2_147_483_647;

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** `<bash>`: one command in the persistent shell, so `cd` and `export` carry over to the next. */
export const bashHandler: Handler = async (action, ctx) => {
  const body = action.body as unknown as BashBody;
  // Node timers treat anything above 2^31-1 ms as 1 ms: a huge timeout_secs must not become an instant one.
  const timeoutMs = body.timeout_secs !== undefined ? Math.min(MAX_TIMER_MS, Math.max(1, Math.round(body.timeout_secs * 1000))) : ctx.defaultTimeoutMs;
  const r = await ctx.sandbox.exec(body.cmd, {
    timeoutMs,
    background: !body.block,
    trace: ctx.trace,
    maxOutputBytes: commandOutputCap(ctx),
  });
  const facts: string[] = [];
  if (!body.block) facts.push('started in the background');
  else if (r.timedOut) facts.push(`timed out after ${seconds(timeoutMs)}: the command was killed, the shell is still usable; raise timeout_secs, or use block: false for servers and long jobs`);
  else facts.push(`exit code ${r.exitCode ?? 'unknown'}`, seconds(r.durationMs));
  if ((r as { oomKilled?: boolean }).oomKilled) facts.push('killed by the out-of-memory killer');
  if (r.droppedBytes > 0) facts.push(`${plural(r.droppedBytes, 'byte')} of output dropped from the middle`);
  const ok = !r.timedOut && r.exitCode === 0;
  const text = r.output.replace(/\n$/, '');
  return {
    ...output('bash_output', ctx, text === '' ? '(no output)' : text, `[${facts.join('; ')}]`, ok),
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    trace: ctx.trace ? r.trace : undefined,
    // Ending on a background start would end the episode before the command did anything.
    endsEpisode: body.end_after_cmd_success && body.block && ok,
  };
};
