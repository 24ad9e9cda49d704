/** What every handler shares: the outcome shape, path resolution in the sandbox, error wording. */
import { posix } from 'node:path';
import { TbrlError } from '../../errors';
import type { ActionContext, ParsedAction } from '../types';
import type { CommandTrace } from '../../trace/types';
import { wrapWithTrailer } from '../bound';

/** A handler's part of the record; the executor adds kind, input and duration. */
export interface HandlerOutcome {
  observation: string;
  ok: boolean;
  exitCode?: number | null;
  timedOut?: boolean;
  trace?: CommandTrace;
  endsEpisode?: boolean;
}

export type Handler = (action: ParsedAction, ctx: ActionContext) => Promise<HandlerOutcome>;

/** Files larger than this are not loaded whole into memory for read/edit. */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;
/** Upper bound for helper commands (stat, find, rg) when the agent did not choose one. */
export const HELPER_TIMEOUT_MS = 60_000;

export function output(tag: string, ctx: ActionContext, main: string, trailer = '', ok = true): HandlerOutcome {
  return { observation: wrapWithTrailer(tag, main, trailer, ctx.maxObservationBytes), ok };
}

export function failure(tag: string, ctx: ActionContext, message: string): HandlerOutcome {
  return output(tag, ctx, `Error: ${message}`, '', false);
}

export function emptyTrace(): CommandTrace {
  return { reads: [], writes: [], stdoutValues: [], ports: [], processes: [] };
}

/**
 * The cap asked of the sandbox: a little under the observation bound, so the wrapper and the
 * trailer fit without cutting the output a second time.
 */
export function commandOutputCap(ctx: ActionContext): number {
  return Math.max(256, ctx.maxObservationBytes - 512);
}

export function helperTimeout(ctx: ActionContext): number {
  return Math.min(ctx.defaultTimeoutMs > 0 ? ctx.defaultTimeoutMs : HELPER_TIMEOUT_MS, HELPER_TIMEOUT_MS);
}

const CWD_MARK = '__TBRL_CWD__';
const strayOutput = new WeakMap<ActionContext, string[]>();

/**
 * Output that background jobs printed since the last command arrives with the next command
 * run in the persistent shell, so a helper call made there must hand it on, or the agent
 * would never see it.
 */
export function takeStrayOutput(ctx: ActionContext): string {
  const parts = strayOutput.get(ctx) ?? [];
  strayOutput.delete(ctx);
  return parts.join('');
}

async function shellDirs(ctx: ActionContext): Promise<{ cwd: string; home: string }> {
  const r = await ctx.sandbox.exec(`printf '\\n${CWD_MARK}%s\\n%s\\n' "$PWD" "$HOME"`, { timeoutMs: 10_000 });
  const at = r.output.lastIndexOf(`\n${CWD_MARK}`);
  if (at < 0) return { cwd: '/', home: '/root' };
  const stray = r.output.slice(0, at);
  if (stray.trim() !== '') strayOutput.set(ctx, [...(strayOutput.get(ctx) ?? []), `${stray}\n`]);
  const [cwd, home] = r.output.slice(at + CWD_MARK.length + 1).split('\n');
  return { cwd: cwd?.startsWith('/') ? cwd : '/', home: home?.startsWith('/') ? home : '/root' };
}

/** The persistent shell's working directory: relative paths mean what they mean in `bash`. */
export async function shellCwd(ctx: ActionContext): Promise<string> {
  return (await shellDirs(ctx)).cwd;
}

export async function resolvePath(ctx: ActionContext, path: string): Promise<string> {
  const p = path.trim();
  // The kernel ends a path at NUL: "/app/x\0.py" would write /app/x and report the other name.
  if (p.includes('\0')) throw new TbrlError('ACTION_BAD_PATH', `the path ${JSON.stringify(p)} contains a NUL byte, which no file name can hold.`, 'Give the path without control characters.');
  if (p.startsWith('/')) return posix.normalize(p);
  const dirs = await shellDirs(ctx);
  if (p === '~' || p.startsWith('~/')) return posix.join(dirs.home, p.slice(1));
  return posix.resolve(dirs.cwd, p);
}

export interface PathInfo {
  /** The path with symlinks resolved (writes go to the link's target, as `>` would). */
  real: string;
  exists: boolean;
  type?: 'file' | 'directory' | 'other';
  size?: number;
  /** Permission bits, to keep an executable script executable after an edit. */
  mode?: number;
}

const INSPECT_SCRIPT = 'r=$(readlink -f -- "$1" 2>/dev/null) || r=""; [ -n "$r" ] || r="$1"; printf "%s\\n" "$r"; stat -c "%F|%s|%a" -- "$r" 2>/dev/null || echo missing';

export async function inspectPath(ctx: ActionContext, abs: string): Promise<PathInfo> {
  const r = await ctx.sandbox.execArgv(['sh', '-c', INSPECT_SCRIPT, 'tbrl-inspect', abs], { timeoutMs: helperTimeout(ctx) });
  const lines = r.output.split('\n');
  const real = lines[0]?.startsWith('/') ? lines[0] : abs;
  const stat = lines[1] ?? 'missing';
  const m = /^(.*)\|(\d+)\|([0-7]+)$/.exec(stat);
  if (!m) return { real, exists: false };
  const type = /directory/.test(m[1]!) ? 'directory' : /regular/.test(m[1]!) ? 'file' : 'other';
  return { real, exists: true, type, size: Number(m[2]), mode: parseInt(m[3]!, 8) };
}

export function plural(n: number, word: string): string {
  if (n === 1) return `${n} ${word}`;
  return `${n} ${/[^aeiou]y$/.test(word) ? `${word.slice(0, -1)}ies` : `${word}s`}`;
}
