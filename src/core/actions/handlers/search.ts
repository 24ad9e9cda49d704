/** `<search>`: grep (ripgrep when the image has it), glob (find + picomatch), ls. */
import type { ActionContext } from '../types';
import type { Sandbox } from '../../sandbox/types';
import type { GlobBody, GrepBody, LsBody } from '../schema';
import { planGlob, findArgv, matchGlob, ignoreFilter } from '../glob';
import { commandOutputCap, failure, helperTimeout, output, plural, resolvePath, shellCwd, type Handler, type HandlerOutcome } from './common';

const TAG = 'search_output';
const MAX_GLOB_RESULTS = 500;
const MAX_LS_ENTRIES = 1000;
/** A file listing is input to matching, not an observation: it may be large. */
const LISTING_BYTES = 32 * 1024 * 1024;

const ripgrepCache = new WeakMap<Sandbox, Promise<boolean>>();

/** Whether `rg` runs in this sandbox; asked once per sandbox. */
export function hasRipgrep(sandbox: Sandbox): Promise<boolean> {
  let p = ripgrepCache.get(sandbox);
  if (!p) {
    p = sandbox.execArgv(['sh', '-c', 'command -v rg >/dev/null 2>&1'], { timeoutMs: 10_000 }).then((r) => r.exitCode === 0, () => false);
    ripgrepCache.set(sandbox, p);
  }
  return p;
}

export function grepArgv(useRipgrep: boolean, body: GrepBody, root: string): string[] {
  if (useRipgrep) {
    return ['rg', '--line-number', '--no-heading', '--with-filename', '--color', 'never', '--hidden', '--sort', 'path',
      '--max-columns', '400', '--max-columns-preview', '-g', '!.git', ...(body.include ? ['-g', body.include] : []), '-e', body.pattern, '--', root];
  }
  return ['grep', '-rnIHE', '--exclude-dir=.git', ...(body.include ? [`--include=${body.include}`] : []), '-e', body.pattern, '--', root];
}

async function grep(ctx: ActionContext, body: GrepBody): Promise<HandlerOutcome> {
  const root = body.path ? await resolvePath(ctx, body.path) : await shellCwd(ctx);
  const rg = await hasRipgrep(ctx.sandbox);
  const r = await ctx.sandbox.execArgv(grepArgv(rg, body, root), { timeoutMs: helperTimeout(ctx), maxOutputBytes: commandOutputCap(ctx), trace: ctx.trace });
  const where = `${root}${body.include ? ` (files matching ${body.include})` : ''}`;
  const trace = ctx.trace ? r.trace : undefined;
  if (r.timedOut) return { ...failure(TAG, ctx, `the search timed out after ${helperTimeout(ctx) / 1000} s; narrow \`path\` or \`include\`.`), trace };
  if (r.exitCode === 1 && r.output.trim() === '') return { ...output(TAG, ctx, `No matches for /${body.pattern}/ in ${where}.`), trace };
  const lines = r.output.replace(/\n$/, '').split('\n');
  const errorsOnly = r.exitCode === 2 && lines.every((l) => /^(rg|grep): /.test(l));
  if (errorsOnly) return { ...failure(TAG, ctx, `${rg ? 'ripgrep' : 'grep'} failed: ${r.output.trim()}`), trace };
  const count = r.droppedBytes > 0
    ? `${plural(lines.length, 'line')} shown from ${where}; ${plural(r.droppedBytes, 'byte')} of matches omitted from the middle, narrow \`path\`, \`include\` or the pattern`
    : `${plural(lines.length, 'matching line')} in ${where}`;
  return { ...output(TAG, ctx, r.output.replace(/\n$/, ''), `[${count}]`), trace };
}

async function glob(ctx: ActionContext, body: GlobBody): Promise<HandlerOutcome> {
  const plan = planGlob(body.pattern, await shellCwd(ctx), body.path);
  const r = await ctx.sandbox.execArgv(findArgv(plan.root, plan.pattern), { timeoutMs: helperTimeout(ctx), maxOutputBytes: LISTING_BYTES, trace: ctx.trace });
  const trace = ctx.trace ? r.trace : undefined;
  const listed = r.output.split('\n').filter((l) => l.startsWith('/'));
  const problems = r.output.split('\n').filter((l) => l.startsWith('find: '));
  if (listed.length === 0 && problems.some((p) => /No such file or directory/.test(p) && p.includes(`'${plan.root}'`))) {
    return { ...failure(TAG, ctx, `${plan.root} does not exist.`), trace };
  }
  const { matches, byBasename } = matchGlob(listed, plan);
  const partial = r.droppedBytes > 0 || r.timedOut ? ' The file listing was incomplete (too many files or too slow): narrow `path`.' : '';
  if (matches.length === 0) return { ...output(TAG, ctx, `No files match ${body.pattern} under ${plan.root}.${partial}`), trace };
  const shown = matches.slice(0, MAX_GLOB_RESULTS);
  const notes = [`${plural(matches.length, 'file')} match ${body.pattern} under ${plan.root}`];
  if (byBasename) notes.push(`nothing matched at the top level, so these match the file name at any depth (use **/${plan.pattern} to say so)`);
  if (matches.length > shown.length) notes.push(`first ${shown.length} shown, narrow the pattern for the rest`);
  return { ...output(TAG, ctx, shown.join('\n'), `[${notes.join('; ')}.${partial}]`), trace };
}

async function ls(ctx: ActionContext, body: LsBody): Promise<HandlerOutcome> {
  const abs = await resolvePath(ctx, body.path);
  const names = await ctx.sandbox.execArgv(['ls', '-A1', '--', abs], { timeoutMs: helperTimeout(ctx), maxOutputBytes: LISTING_BYTES });
  if (names.exitCode !== 0) return failure(TAG, ctx, names.output.trim() || `cannot list ${abs}`);
  const all = names.output.split('\n').filter((n) => n !== '');
  // `ls -A1 file` prints the file itself: list it as is.
  if (all.length === 1 && all[0] === abs) {
    const r = await ctx.sandbox.execArgv(['ls', '-ld', '--', abs], { timeoutMs: helperTimeout(ctx) });
    return output(TAG, ctx, r.output.trim());
  }
  const ignored = ignoreFilter(body.ignore);
  const kept = all.filter((n) => !ignored(n));
  if (kept.length === 0) return output(TAG, ctx, `${abs} is empty${all.length > 0 ? ` after ignoring ${plural(all.length, 'entry')}` : ''}.`);
  const shown = kept.slice(0, MAX_LS_ENTRIES);
  const r = await ctx.sandbox.execArgv(['ls', '-ld', '--', ...shown], { cwd: abs, timeoutMs: helperTimeout(ctx), maxOutputBytes: ctx.maxObservationBytes });
  const notes = [`${abs}: ${plural(kept.length, 'entry')}`];
  if (all.length > kept.length) notes.push(`${all.length - kept.length} ignored`);
  if (kept.length > shown.length) notes.push(`first ${shown.length} shown`);
  return output(TAG, ctx, r.output.replace(/\n$/, ''), `[${notes.join('; ')}]`, r.exitCode === 0);
}

export const searchHandler: Handler = async (action, ctx) => {
  switch (action.kind) {
    case 'search.grep': return grep(ctx, action.body as unknown as GrepBody);
    case 'search.glob': return glob(ctx, action.body as unknown as GlobBody);
    case 'search.ls': return ls(ctx, action.body as unknown as LsBody);
    default: return failure(TAG, ctx, `unsupported search action ${action.kind}`);
  }
};
