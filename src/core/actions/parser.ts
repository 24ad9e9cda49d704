/**
 * Turn text -> actions. Tags are found in order; `<think>` blocks are skipped; each action's
 * body is YAML, validated against its schema. Anything malformed becomes an error item that
 * quotes the text and shows a correct example, so the agent can repair it on the next turn.
 * parseTurn never throws: the step loop feeds it arbitrary model output.
 */
import { parseDocument } from 'yaml';
import type { ActionParseError, ParsedTurn } from './types';
import { ACTION_TAGS, isActionTag, validateAction, describeValue, type ActionTag } from './schema';
import { makeParseError, unknownTagProblem } from './errors';
import { closest } from './suggest';
import { errorMessage } from '../errors';

type Item = ParsedTurn['items'][number];

/** Blocks of reasoning: never actions, and tags inside them are not run. */
const THINK_TAGS = new Set(['think', 'thinking', 'reasoning']);
/** An opening tag: a name and optional trailing text (attributes, or `/` for self-closing). */
const OPEN_TAG = /<([A-Za-z_][\w.-]*)([^<>\n]*)>/g;
/**
 * A line that is nothing but an opening action tag at column 0: the previous tag surely ended
 * before it. (Inside a YAML block value every line is indented, so file contents such as an
 * XML `<search>` element do not trip this.)
 */
const ACTION_OPEN_LINE = new RegExp(`^<(${ACTION_TAGS.join('|')})>[ \\t]*$`, 'm');

const MAX_LINE_SHOWN = 200;
/** Prose full of markup should not bury the real errors. */
const MAX_UNKNOWN_TAG_ERRORS = 5;
/** Beyond this, errors are counted, not listed: each becomes an observation in the context. */
const MAX_ERRORS_PER_TURN = 10;
const MAX_BODY_CHARS_FOR_YAML = 2_000_000;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
}

type CloseCache = Map<string, { from: number; found?: { start: number; end: number } }>;

/**
 * The first `</name>` at or after `from`. Cached per name so that a text full of opening tags
 * stays linear: a search that found nothing from `from` finds nothing from any later point, and
 * a close found at `c` is still the first one for any start up to `c`.
 */
function findClose(cache: CloseCache, text: string, name: string, from: number, caseInsensitive: boolean): { start: number; end: number } | undefined {
  const key = `${caseInsensitive ? 'i' : 's'}:${name}`;
  const hit = cache.get(key);
  if (hit && hit.from <= from && (!hit.found || hit.found.start >= from)) return hit.found;
  const found = searchClose(text, name, from, caseInsensitive);
  cache.set(key, { from, found });
  return found;
}

function searchClose(text: string, name: string, from: number, caseInsensitive: boolean): { start: number; end: number } | undefined {
  const re = new RegExp(`</${escapeRegExp(name)}\\s*>`, caseInsensitive ? 'gi' : 'g');
  re.lastIndex = from;
  const m = re.exec(text);
  return m ? { start: m.index, end: m.index + m[0].length } : undefined;
}

/**
 * Models whose chat template opens `<think>` in the prompt emit only the closing tag: everything
 * before a leading `</think>` is reasoning.
 */
function startAfterOrphanThinkClose(text: string): number {
  const close = /<\/think\s*>/i.exec(text);
  if (!close) return 0;
  const open = /<think\s*>/i.exec(text);
  return open && open.index < close.index ? 0 : close.index + close[0].length;
}

export interface NormalizedBody {
  text: string;
}

/**
 * Bodies are often indented as a whole or wrapped in a code fence; neither is an error the
 * agent should pay a turn for.
 */
export function normalizeBody(body: string): NormalizedBody {
  let lines = body.split(/\r?\n/);
  while (lines.length > 0 && lines[0]!.trim() === '') lines.shift();
  // Trailing empty lines are noise, except in a `key: |+` block that keeps them; lines of only
  // spaces stay, since in a block scalar they can be content.
  if (!/[|>][1-9]?\+/.test(body)) while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  let last = lines.length - 1;
  while (last > 0 && lines[last]!.trim() === '') last--;
  if (last >= 1 && /^\s*```[\w-]*\s*$/.test(lines[0]!) && /^\s*```\s*$/.test(lines[last]!)) {
    lines = lines.slice(1, last);
  }
  const indents = lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)![0].length);
  const indent = indents.length > 0 ? Math.min(...indents) : 0;
  if (indent > 0) lines = lines.map((l) => l.slice(Math.min(indent, /^ */.exec(l)![0].length)));
  return { text: lines.join('\n') };
}

function yamlHint(code: string, message: string): string {
  if (code === 'BLOCK_AS_IMPLICIT_KEY' || code === 'MULTILINE_IMPLICIT_KEY' || /nested mappings/i.test(message)) {
    return 'A value that contains ": " must be quoted (cmd: "echo a: b") or written as a block: `cmd: |` followed by the text on the next lines, indented.';
  }
  if (code === 'MISSING_CHAR' || /quote/i.test(message)) {
    return 'A quoted string was not closed. Inside double quotes write \\" for a quote and \\\\ for a backslash, or avoid quoting with a block: `key: |` and the text indented below.';
  }
  if (code === 'DUPLICATE_KEY') {
    return 'Each field may appear only once per action. To run several commands, use several <bash> actions or join them with && in one cmd.';
  }
  if (code === 'TAB_AS_INDENT') return 'YAML does not allow tabs for indentation: indent with spaces.';
  if (code === 'BAD_INDENT' || /indent/i.test(message)) {
    return 'Indentation is inconsistent: every field starts at the same column, and the lines of a `key: |` block are indented more than the key.';
  }
  if (code === 'BAD_SCALAR_START') {
    return 'A value that starts with a special character (@ ` % * & ! | > { [ ,) must be quoted.';
  }
  return 'Quote values that contain ": " or " #" or start with a special character, or write them as a block (`key: |` and the text indented below).';
}

/** The lines around a YAML error, numbered, with a caret under the column. */
function numberedExcerpt(text: string, line: number, col: number): string {
  const lines = text.split('\n');
  const first = Math.max(1, line - 2);
  const last = Math.min(lines.length, line + 1);
  const width = String(last).length;
  const out: string[] = [];
  for (let n = first; n <= last; n++) {
    const raw = lines[n - 1] ?? '';
    const shown = raw.length > MAX_LINE_SHOWN ? `${raw.slice(0, MAX_LINE_SHOWN)}…` : raw;
    out.push(`${String(n).padStart(width)} | ${shown}`);
    if (n === line && col >= 1 && col <= MAX_LINE_SHOWN + 1) out.push(`${' '.repeat(width)} | ${' '.repeat(col - 1)}^`);
  }
  return out.join('\n');
}

type BodyResult = { ok: true; value: unknown } | { ok: false; error: Omit<Parameters<typeof makeParseError>[0], 'tag'> };

function parseYamlBody(text: string, raw: string): BodyResult {
  if (text.length > MAX_BODY_CHARS_FOR_YAML) {
    return { ok: false, error: { code: 'invalid-value', problem: `the body is ${text.length} characters long; the limit is ${MAX_BODY_CHARS_FOR_YAML}. Write large files in parts, or generate them with a command.`, excerpt: raw } };
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true, strict: true });
  const err = doc.errors[0];
  if (err) {
    const pos = err.linePos?.[0];
    const bare = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?\s*$/, '');
    const where = pos ? ` at line ${pos.line}, column ${pos.col} of the body` : '';
    const more = doc.errors.length > 1 ? ` (and ${doc.errors.length - 1} more YAML error${doc.errors.length > 2 ? 's' : ''})` : '';
    return {
      ok: false,
      error: {
        code: 'yaml-syntax',
        problem: `invalid YAML${where}: ${bare}${more}.\nHint: ${yamlHint(err.code, err.message)}`,
        excerpt: pos ? numberedExcerpt(text, pos.line, pos.col) : raw,
      },
    };
  }
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: 100 }) };
  } catch (e) {
    return { ok: false, error: { code: 'yaml-syntax', problem: `invalid YAML: ${errorMessage(e)}`, excerpt: raw } };
  }
}

function parseAction(tag: ActionTag, body: string, raw: string): Item {
  const fail = (e: Omit<Parameters<typeof makeParseError>[0], 'tag'>): Item => ({ ok: false, error: makeParseError({ ...e, tag }) });
  const { text } = normalizeBody(body);
  const parsed = parseYamlBody(text, raw);
  if (!parsed.ok) return fail(parsed.error);
  let value = parsed.value;
  if (tag === 'finish' && (value === null || value === undefined)) value = {};
  // `<finish>All tests pass</finish>` says what it means; asking for a retry would only cost a turn.
  if (tag === 'finish' && typeof value === 'string') value = { message: value };
  if (value === null || value === undefined) {
    return fail({ code: 'empty-body', problem: `the body is empty; <${tag}> needs YAML fields inside it`, excerpt: raw });
  }
  if (typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) {
    const asCommand = tag === 'bash' && typeof value === 'string'
      ? ` To run a command, write it as \`cmd: ...\` (quoted if it contains ": " or "#").`
      : '';
    return fail({ code: 'not-a-mapping', problem: `the body must be YAML fields (\`name: value\` lines), but it parsed as ${describeValue(value)}.${asCommand}`, excerpt: raw });
  }
  const result = validateAction(tag, value as Record<string, unknown>);
  if (!result.ok) {
    const list = result.problems.length === 1 ? result.problems[0]! : result.problems.map((p) => `- ${p}`).join('\n');
    const lead = result.problems.length === 1 ? '' : `${result.problems.length} problems:\n`;
    return fail({ code: result.code as never, kind: result.kind, problem: `${lead}${list}`, excerpt: raw });
  }
  return { ok: true, action: { tag, kind: result.kind, body: result.body, raw } };
}

function errorItem(error: ActionParseError): Item {
  return { ok: false, error };
}

function scan(text: string): ParsedTurn {
  const items: Item[] = [];
  let errors = 0;
  let suppressed = 0;
  const push = (item: Item) => {
    if (!item.ok && ++errors > MAX_ERRORS_PER_TURN) suppressed++;
    else items.push(item);
  };
  const closes: CloseCache = new Map();
  let unknownTags = 0;
  let pos = startAfterOrphanThinkClose(text);
  for (;;) {
    OPEN_TAG.lastIndex = pos;
    const m = OPEN_TAG.exec(text);
    if (!m) break;
    const name = m[1]!;
    const attrs = m[2]!.trim();
    const start = m.index;
    const afterOpen = start + m[0].length;
    const lower = name.toLowerCase();

    if (THINK_TAGS.has(lower) && attrs === '') {
      const close = findClose(closes, text, name, afterOpen, true);
      // An unclosed think block: keep scanning, as the original agent does, rather than lose the turn.
      pos = close ? close.end : afterOpen;
      continue;
    }

    // `<bash>` in inline code is prose about the tag, not a use of it.
    if (text[start - 1] === '`' && text[afterOpen] === '`') {
      pos = afterOpen;
      continue;
    }

    if (isActionTag(name)) {
      if (attrs === '/') {
        push(name === 'finish'
          ? parseAction(name, '', m[0])
          : errorItem(makeParseError({ code: 'empty-body', tag: name, problem: `<${name}/> has no body; <${name}> needs YAML fields between <${name}> and </${name}>`, excerpt: m[0] })));
        pos = afterOpen;
        continue;
      }
      const close = findClose(closes, text, name, afterOpen, false);
      if (attrs !== '') {
        push(errorItem(makeParseError({ code: 'tag-attributes', tag: name, problem: `tags take no attributes (\`${m[0]}\`); put every field in the YAML body between <${name}> and </${name}>`, excerpt: text.slice(start, close ? close.end : afterOpen + 300) })));
        pos = close ? close.end : afterOpen;
        continue;
      }
      const body = close ? text.slice(afterOpen, close.start) : '';
      if (!close || ACTION_OPEN_LINE.test(body)) {
        push(errorItem(makeParseError({ code: 'unclosed-tag', tag: name, problem: `<${name}> is never closed: end the action with </${name}> (each action is <tag>, YAML fields, </tag>; tags do not nest)`, excerpt: text.slice(start, Math.min(text.length, afterOpen + 400)) })));
        pos = afterOpen;
        continue;
      }
      push(parseAction(name, body, text.slice(start, close.end)));
      pos = close.end;
      continue;
    }

    // Another tag: an error only when it is closed somewhere (an attempt at an action, or an
    // echoed output tag); a lone `<x>` in prose is left alone. Scanning goes on inside it so
    // that actions wrapped in an unknown tag still run.
    if (attrs === '' && /^[a-z_][a-z0-9_-]{0,39}$/i.test(name)) {
      const close = findClose(closes, text, name, afterOpen, false);
      if (close && unknownTags++ < MAX_UNKNOWN_TAG_ERRORS) {
        const suggestion = closest(name, ACTION_TAGS);
        const kind = suggestion ?? (/_output$/.test(name) ? name.replace(/_output$/, '') : undefined);
        push(errorItem(makeParseError({ code: 'unknown-tag', kind: kind && isActionTag(kind) ? kind : undefined, problem: unknownTagProblem(name, suggestion), excerpt: text.slice(start, close.end) })));
      }
    }
    pos = afterOpen;
  }
  if (suppressed > 0) {
    items.push(errorItem(makeParseError({ code: 'too-many-errors', problem: `${suppressed} more malformed item${suppressed === 1 ? '' : 's'} in this turn ${suppressed === 1 ? 'is' : 'are'} not listed. Write fewer actions per turn, each as <tag>, YAML fields, </tag>.`, excerpt: '' })));
  }
  return { items };
}

/** Parse one model turn. Never throws. */
export function parseTurn(text: string): ParsedTurn {
  const input = typeof text === 'string' ? text : String(text ?? '');
  try {
    return scan(input);
  } catch (e) {
    // A defect in the parser must cost the agent one turn, not the whole run.
    return { items: [errorItem(makeParseError({ code: 'invalid-value', problem: `the turn could not be parsed (${errorMessage(e)})`, excerpt: input.slice(0, 400) }))] };
  }
}

/** True when the turn holds at least one well-formed action. */
export function hasAction(turn: ParsedTurn): boolean {
  return turn.items.some((i) => i.ok);
}
