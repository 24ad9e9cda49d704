/**
 * Where each frame shell keeps the state its command processes hand over (`<prefix><random>/`):
 * the tracer ignores it, as it ignores its own files under `/.tbrl-`.
 */
export const SHELL_STATE_PREFIX = '/tmp/.tbrl-shell-';
