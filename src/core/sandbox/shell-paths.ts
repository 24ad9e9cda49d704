/**
 * Where each frame shell keeps the state its command processes hand over (`<prefix><random>/`):
 * the tracer ignores it, as it ignores its own files under `/.tbrl-`.
 */
export const SHELL_STATE_PREFIX = '/tmp/.tbrl-shell-';

/**
 * Paths the frame shell opens around a traced command to cut the trace into per-command windows
 * (`<prefix><n>-begin|end`); they never exist. Only opens by the frame shell's own pid count: the
 * agent's code never runs in it, so a command opening one itself is a forgery (trace/windows.ts).
 */
export const TRACE_MARK_PREFIX = '/.tbrl-mark-';
