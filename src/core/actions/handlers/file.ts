/**
 * `<file>`: read, write, edit, multi_edit, metadata. Contents move through the sandbox's file
 * primitives (a tar stream), never through a shell command line, so any bytes survive: quotes,
 * backslashes, `$()`, NULs. Edits are computed here in memory and written once.
 */
import type { ActionContext } from '../types';
import type { FileEditBody, FileMetadataBody, FileMultiEditBody, FileReadBody, FileWriteBody } from '../schema';
import type { CommandTrace } from '../../trace/types';
import { lineHunks } from '../../trace/linediff';
import { applyEdit, applyEdits, decodeExactUtf8, looksBinary, numberLines } from '../edit';
import { renderRead, splitLines, DEFAULT_READ_LIMIT } from '../view';
import { byteLength } from '../bound';
import { errorMessage } from '../../errors';
import { emptyTrace, failure, helperTimeout, inspectPath, MAX_FILE_BYTES, output, plural, resolvePath, type Handler, type HandlerOutcome, type PathInfo } from './common';

const TAG = 'file_output';

function missing(abs: string, forEdit: boolean): string {
  return `${abs} does not exist.${forEdit ? ' To create a file, use `action: write`.' : ''} Find files with <search> (action: glob or ls).`;
}

function readTrace(ctx: ActionContext, abs: string): CommandTrace | undefined {
  return ctx.trace ? { ...emptyTrace(), reads: [abs] } : undefined;
}

/**
 * An edit reads the file it changes (its old_string had to be there), a write does not: an
 * overwrite alone must make no dependency edge.
 */
function writeTrace(path: string, before: string | undefined, after: string, readsFile: boolean): CommandTrace {
  return { ...emptyTrace(), reads: readsFile ? [path] : [], writes: [{ path, hunks: lineHunks(before ?? '', after), created: before === undefined, linesAfter: splitLines(after).length }] };
}

async function read(ctx: ActionContext, body: FileReadBody): Promise<HandlerOutcome> {
  const abs = await resolvePath(ctx, body.file_path);
  const info = await inspectPath(ctx, abs);
  if (!info.exists) return failure(TAG, ctx, missing(abs, false));
  if (info.type === 'directory') return failure(TAG, ctx, `${abs} is a directory; list it with <search> action: ls.`);
  if (info.type === 'other') return failure(TAG, ctx, `${abs} is not a regular file (a device, socket or pipe); use <bash> to read from it.`);
  if ((info.size ?? 0) > MAX_FILE_BYTES) return readLarge(ctx, info, body);
  const buf = await ctx.sandbox.readFile(info.real);
  if (looksBinary(buf)) {
    return { ...failure(TAG, ctx, `${abs} is a binary file (${plural(buf.length, 'byte')}); inspect it with <bash>, e.g. \`xxd ${abs} | head -50\` or \`file ${abs}\`.`), trace: readTrace(ctx, info.real) };
  }
  const view = renderRead(buf.toString('utf8'), body.offset, body.limit);
  return { ...numberedOutput(ctx, abs, view.text, view.firstLine, view.totalLines), trace: readTrace(ctx, info.real) };
}

/**
 * Numbered lines cut at a whole line when the observation bound is reached, so the agent can
 * go on exactly where the text stopped.
 */
function numberedOutput(ctx: ActionContext, abs: string, text: string, firstLine: number, totalLines: number | undefined): HandlerOutcome {
  if (totalLines === 0) return output(TAG, ctx, `${abs} is empty (0 lines).`);
  if (text === '') return output(TAG, ctx, `${abs} has ${plural(totalLines ?? 0, 'line')}; offset ${firstLine} is past the end.`);
  const budget = ctx.maxObservationBytes - byteLength(`<${TAG}>\n\n</${TAG}>`) - 200;
  const lines = text.split('\n');
  let used = 0;
  let shown = 0;
  while (shown < lines.length && used + byteLength(lines[shown]!) + 1 <= budget) used += byteLength(lines[shown++]!) + 1;
  if (shown === 0) shown = Math.min(1, lines.length);
  const lastLine = firstLine + shown - 1;
  const total = totalLines === undefined ? '' : ` of ${totalLines}`;
  const more = totalLines === undefined ? shown === lines.length : lastLine >= totalLines;
  const trailer = more
    ? `[${abs}: lines ${firstLine}-${lastLine}${total}]`
    : `[${abs}: lines ${firstLine}-${lastLine}${total}; read on with offset: ${lastLine + 1}]`;
  return output(TAG, ctx, lines.slice(0, shown).join('\n'), trailer);
}

/** Files too big to load: the window is cut out in the container. */
async function readLarge(ctx: ActionContext, info: PathInfo, body: FileReadBody): Promise<HandlerOutcome> {
  const first = Math.max(1, body.offset ?? 1);
  const last = first + (body.limit ?? DEFAULT_READ_LIMIT) - 1;
  const r = await ctx.sandbox.execArgv(['sed', '-n', `${first},${last}p;${last}q`, '--', info.real], { timeoutMs: helperTimeout(ctx), maxOutputBytes: ctx.maxObservationBytes });
  if (r.exitCode !== 0) return failure(TAG, ctx, `could not read ${info.real}: ${r.output.trim()}`);
  const lines = splitLines(r.output).map((l) => (l.length > 2000 ? `${l.slice(0, 2000)}… [line cut]` : l));
  const text = numberLines(lines, first, Infinity);
  return { ...numberedOutput(ctx, info.real, text, first, undefined), trace: readTrace(ctx, info.real) };
}

/** The current text of a file for editing, or why it cannot be edited. */
async function loadForEdit(ctx: ActionContext, abs: string): Promise<{ info: PathInfo; text: string } | { error: string }> {
  const info = await inspectPath(ctx, abs);
  if (!info.exists) return { error: missing(abs, true) };
  if (info.type === 'directory') return { error: `${abs} is a directory, not a file.` };
  if (info.type === 'other') return { error: `${abs} is not a regular file (a device, socket or pipe).` };
  if ((info.size ?? 0) > MAX_FILE_BYTES) return { error: `${abs} is ${plural(info.size ?? 0, 'byte')}, too large to edit in memory (limit ${MAX_FILE_BYTES}); use <bash> with sed or a script.` };
  const buf = await ctx.sandbox.readFile(info.real);
  const text = looksBinary(buf) ? undefined : decodeExactUtf8(buf);
  if (text === undefined) return { error: `${abs} is binary or not valid UTF-8; editing it as text would corrupt it. Use <bash> (e.g. a Python script) to change it.` };
  return { info, text };
}

/** Numbered lines around the first change, so the agent sees the result without another read. */
function snippetAfter(before: string, after: string): string {
  const hunk = lineHunks(before, after)[0];
  if (!hunk) return '';
  const lines = splitLines(after);
  const from = Math.max(1, hunk.newStart - 3);
  const to = Math.min(lines.length, hunk.newStart + Math.max(hunk.newLines, 1) + 2);
  if (to < from) return '';
  const shown = lines.slice(from - 1, Math.min(to, from + 39));
  const cut = to - from + 1 > shown.length ? '\n[... snippet cut; read the file for the rest]' : '';
  return `\n${numberLines(shown, from)}${cut}`;
}

async function write(ctx: ActionContext, body: FileWriteBody): Promise<HandlerOutcome> {
  const abs = await resolvePath(ctx, body.file_path);
  const info = await inspectPath(ctx, abs);
  if (info.type === 'directory') return failure(TAG, ctx, `${abs} is a directory; give a file path.`);
  if (info.type === 'other') return failure(TAG, ctx, `${abs} is not a regular file (a device, socket or pipe); write to it with <bash>.`);
  let before: string | undefined;
  if (info.exists && ctx.trace && (info.size ?? 0) <= MAX_FILE_BYTES) {
    before = (await ctx.sandbox.readFile(info.real)).toString('utf8');
  } else if (info.exists) before = '';
  await ctx.sandbox.writeFile(info.real, body.content, info.exists ? info.mode : undefined);
  const lines = splitLines(body.content).length;
  const verb = info.exists ? 'Overwrote' : 'Created';
  return {
    ...output(TAG, ctx, `${verb} ${abs} (${plural(byteLength(body.content), 'byte')}, ${plural(lines, 'line')}).`),
    trace: ctx.trace ? writeTrace(info.real, info.exists ? before : undefined, body.content, false) : undefined,
  };
}

async function edit(ctx: ActionContext, body: FileEditBody): Promise<HandlerOutcome> {
  const abs = await resolvePath(ctx, body.file_path);
  const loaded = await loadForEdit(ctx, abs);
  if ('error' in loaded) return failure(TAG, ctx, loaded.error);
  const r = applyEdit(loaded.text, body);
  if (!r.ok) return failure(TAG, ctx, `${abs} was not changed: ${r.problem}`);
  await ctx.sandbox.writeFile(loaded.info.real, r.content, loaded.info.mode);
  const note = r.note ? `\n${r.note}` : '';
  return {
    ...output(TAG, ctx, `Edited ${abs}: ${plural(r.replacements, 'replacement')}.${note}${snippetAfter(loaded.text, r.content)}`),
    trace: ctx.trace ? writeTrace(loaded.info.real, loaded.text, r.content, true) : undefined,
  };
}

async function multiEdit(ctx: ActionContext, body: FileMultiEditBody): Promise<HandlerOutcome> {
  const abs = await resolvePath(ctx, body.file_path);
  const loaded = await loadForEdit(ctx, abs);
  if ('error' in loaded) return failure(TAG, ctx, loaded.error);
  const r = applyEdits(loaded.text, body.edits);
  if (!r.ok) return failure(TAG, ctx, `${abs} was not changed (multi_edit is all or nothing): ${r.problem}`);
  await ctx.sandbox.writeFile(loaded.info.real, r.content, loaded.info.mode);
  const notes = r.notes.length > 0 ? `\n${r.notes.join('\n')}` : '';
  return {
    ...output(TAG, ctx, `Edited ${abs}: ${plural(body.edits.length, 'edit')} applied (${r.replacements.map((n, i) => `#${i + 1}: ${n}`).join(', ')} replacements).${notes}${snippetAfter(loaded.text, r.content)}`),
    trace: ctx.trace ? writeTrace(loaded.info.real, loaded.text, r.content, true) : undefined,
  };
}

// One `stat` per path in a single container call; fields are split in TS.
const METADATA_SCRIPT = `for p in "$@"; do
  printf '@@ %s\\n' "$p"
  if [ -e "$p" ] || [ -L "$p" ]; then
    stat -L -c '%F|%s|%A|%a|%U:%G|%y' -- "$p" 2>/dev/null || stat -c '%F|%s|%A|%a|%U:%G|%y' -- "$p"
    if [ -f "$p" ] && [ "$(stat -L -c %s -- "$p")" -le ${MAX_FILE_BYTES} ]; then printf 'lines|%s\\n' "$(wc -l < "$p")"; fi
    if [ -L "$p" ]; then printf 'link|%s\\n' "$(readlink -- "$p")"; fi
  else echo missing; fi
done`;

async function metadata(ctx: ActionContext, body: FileMetadataBody): Promise<HandlerOutcome> {
  const paths: string[] = [];
  for (const p of body.file_paths) paths.push(await resolvePath(ctx, p));
  const r = await ctx.sandbox.execArgv(['sh', '-c', METADATA_SCRIPT, 'tbrl-metadata', ...paths], { timeoutMs: helperTimeout(ctx), maxOutputBytes: ctx.maxObservationBytes });
  const blocks = r.output.split(/^@@ /m).slice(1);
  const out: string[] = [];
  let allFound = true;
  for (const block of blocks) {
    const [path, ...rest] = block.replace(/\n$/, '').split('\n');
    const fields: string[] = [];
    for (const line of rest) {
      if (line === 'missing') {
        allFound = false;
        fields.push('does not exist');
        continue;
      }
      const lines = /^lines\|(\d+)/.exec(line);
      if (lines) {
        fields.push(`lines: ${lines[1]}`);
        continue;
      }
      const link = /^link\|(.*)$/.exec(line);
      if (link) {
        fields.push(`symlink to: ${link[1]}`);
        continue;
      }
      const m = /^(.*)\|(\d+)\|(\S+)\|([0-7]+)\|(.*)\|(.*)$/.exec(line);
      if (m) fields.push(`type: ${m[1]}`, `size: ${plural(Number(m[2]), 'byte')}`, `permissions: ${m[3]} (${m[4]})`, `owner: ${m[5]}`, `modified: ${m[6]}`);
      else if (line.trim()) fields.push(line.trim());
    }
    out.push(`${path}\n${fields.map((f) => `  ${f}`).join('\n')}`);
  }
  if (out.length === 0) return failure(TAG, ctx, `could not read metadata: ${r.output.trim() || `exit code ${r.exitCode}`}`);
  return output(TAG, ctx, out.join('\n'), '', allFound);
}

export const fileHandler: Handler = async (action, ctx) => {
  try {
    switch (action.kind) {
      case 'file.read': return await read(ctx, action.body as unknown as FileReadBody);
      case 'file.write': return await write(ctx, action.body as unknown as FileWriteBody);
      case 'file.edit': return await edit(ctx, action.body as unknown as FileEditBody);
      case 'file.multi_edit': return await multiEdit(ctx, action.body as unknown as FileMultiEditBody);
      case 'file.metadata': return await metadata(ctx, action.body as unknown as FileMetadataBody);
      default: return failure(TAG, ctx, `unsupported file action ${action.kind}`);
    }
  } catch (err) {
    // File errors (permission denied, read-only file system) are the agent's to handle; a
    // vanished container or daemon is not, and propagates.
    if ((err as { code?: string }).code === 'SANDBOX_FILE') return failure(TAG, ctx, errorMessage(err).replace(/\n\s*Fix:.*$/s, ''));
    throw err;
  }
};
