/**
 * Exact-string edits, the part of `file.edit` and `file.multi_edit` that needs no container.
 * An edit either applies exactly as asked or fails with an explanation that helps the agent
 * write a matching `old_string` next time (where similar text is, whether only whitespace
 * differs, where the duplicates are).
 */
import type { EditSpec } from './schema';

export type EditOutcome =
  | { ok: true; content: string; replacements: number; note?: string }
  | { ok: false; problem: string };

/** Positions of `needle` in `hay`, non-overlapping, left to right. */
export function occurrences(hay: string, needle: string, max = Infinity): number[] {
  const out: number[] = [];
  if (needle === '') return out;
  for (let i = hay.indexOf(needle); i >= 0 && out.length < max; i = hay.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

/** 1-based line number of a character offset. */
export function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function replaceAt(hay: string, positions: number[], oldLen: number, replacement: string): string {
  let out = '';
  let last = 0;
  for (const p of positions) {
    out += hay.slice(last, p) + replacement;
    last = p + oldLen;
  }
  return out + hay.slice(last);
}

function collapseWs(s: string): string {
  return s.replace(/[ \t]+/g, ' ').split('\n').map((l) => l.trim()).join('\n').trim();
}

function noWs(s: string): string {
  return s.replace(/\s+/g, '');
}

function bigrams(s: string): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < s.length - 1; i++) {
    const g = s.slice(i, i + 2);
    m.set(g, (m.get(g) ?? 0) + 1);
  }
  return m;
}

/** Dice similarity of character bigrams: cheap enough for every line of a large file. */
function similarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const A = bigrams(a);
  const B = bigrams(b);
  let inter = 0;
  for (const [g, n] of A) inter += Math.min(n, B.get(g) ?? 0);
  return (2 * inter) / (a.length - 1 + b.length - 1);
}

const MAX_LINE_FOR_SIMILARITY = 300;
const MAX_LINES_SCANNED = 50_000;

/** The file's lines most like the first line of `old_string`, shown with numbers and context. */
export function nearestLines(content: string, oldString: string, contextLines?: number): string | undefined {
  const probe = oldString.split('\n').map((l) => l.trim()).find((l) => l !== '');
  if (!probe) return undefined;
  const lines = content.split('\n');
  const probeCut = probe.slice(0, MAX_LINE_FOR_SIMILARITY);
  let best = -1;
  let bestScore = 0;
  for (let i = 0; i < Math.min(lines.length, MAX_LINES_SCANNED); i++) {
    const score = similarity(probeCut, lines[i]!.trim().slice(0, MAX_LINE_FOR_SIMILARITY));
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  if (best < 0 || bestScore < 0.4) return undefined;
  const span = Math.max(1, oldString.replace(/\n$/, '').split('\n').length);
  const before = contextLines ?? 1;
  const from = Math.max(0, best - before);
  const to = Math.min(lines.length, best + span + 1);
  return numberLines(lines.slice(from, to), from + 1);
}

/** `cat -n` style: right-aligned number, tab, the line (cut at `maxChars`). */
export function numberLines(lines: string[], firstLine: number, maxChars = 400): string {
  const width = Math.max(6, String(firstLine + lines.length - 1).length);
  return lines.map((l, i) => `${String(firstLine + i).padStart(width)}\t${l.length > maxChars ? `${l.slice(0, maxChars)}…` : l}`).join('\n');
}

function notFound(content: string, e: EditSpec): string {
  const parts = ['`old_string` was not found in the file.'];
  if (content.trim() === '') parts.push('The file is empty.');
  else if (collapseWs(e.old_string) !== '' && (collapseWs(content).includes(collapseWs(e.old_string)) || noWs(content).includes(noWs(e.old_string)))) {
    parts.push('It does match if spaces, tabs and indentation are ignored: copy the exact whitespace from the file (read it with `file.read` first).');
  }
  const near = nearestLines(content, e.old_string);
  if (near) parts.push(`The most similar lines in the file:\n${near}`);
  else parts.push('No similar line was found: read the file first to see its current content.');
  return parts.join('\n');
}

/**
 * Apply one edit to `content`. Fallbacks are taken only when the exact text is absent and the
 * fallback is unambiguous: CRLF files edited with LF text, and a trailing newline that a
 * `key: |` block adds but the file's last line does not have.
 */
export function applyEdit(content: string, e: EditSpec): EditOutcome {
  const exact = tryEdit(content, e);
  if (exact) return exact;
  if (content.includes('\r\n') && !e.old_string.includes('\r')) {
    const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
    const r = tryEdit(content, { ...e, old_string: crlf(e.old_string), new_string: crlf(e.new_string) });
    if (r && r.ok) return { ...r, note: 'The file uses CRLF line endings; your text was matched and written with CRLF.' };
  }
  if (e.old_string.endsWith('\n') && e.new_string.endsWith('\n')) {
    const o = e.old_string.slice(0, -1);
    if (o !== '' && content.endsWith(o) && occurrences(content, o, 2).length === 1) {
      return { ok: true, content: content.slice(0, content.length - o.length) + e.new_string.slice(0, -1), replacements: 1, note: 'Matched at the end of the file, which has no final newline.' };
    }
  }
  return { ok: false, problem: notFound(content, e) };
}

function tryEdit(content: string, e: EditSpec): EditOutcome | undefined {
  const pos = occurrences(content, e.old_string, e.replace_all ? Infinity : 21);
  if (pos.length === 0) return undefined;
  if (pos.length > 1 && !e.replace_all) {
    const lines = pos.slice(0, 20).map((p) => lineOf(content, p));
    const more = pos.length > 20 ? ' and more' : '';
    return {
      ok: false,
      problem: `\`old_string\` is not unique: it occurs ${pos.length > 20 ? 'more than 20' : pos.length} times (starting at lines ${lines.join(', ')}${more}). Include more surrounding lines in \`old_string\` so it matches exactly one place, or set \`replace_all: true\` to replace every occurrence.`,
    };
  }
  return { ok: true, content: replaceAt(content, pos, e.old_string.length, e.new_string), replacements: pos.length };
}

export type MultiEditOutcome =
  | { ok: true; content: string; replacements: number[]; notes: string[] }
  | { ok: false; index: number; problem: string };

/** Apply edits in order, each to the result of the previous; all or nothing. */
export function applyEdits(content: string, edits: EditSpec[]): MultiEditOutcome {
  let cur = content;
  const replacements: number[] = [];
  const notes: string[] = [];
  for (let i = 0; i < edits.length; i++) {
    const r = applyEdit(cur, edits[i]!);
    if (!r.ok) {
      const earlier = i > 0 ? ` (edits are applied in order, so edit ${i + 1} sees the text after edits 1-${i})` : '';
      return { ok: false, index: i, problem: `edit ${i + 1} of ${edits.length} failed${earlier}: ${r.problem}` };
    }
    cur = r.content;
    replacements.push(r.replacements);
    if (r.note) notes.push(`edit ${i + 1}: ${r.note}`);
  }
  return { ok: true, content: cur, replacements, notes };
}

/** Decoding as UTF-8 and encoding back must give the same bytes, or an edit would corrupt the file. */
export function decodeExactUtf8(buf: Buffer): string | undefined {
  const s = buf.toString('utf8');
  return Buffer.from(s, 'utf8').equals(buf) ? s : undefined;
}

export function looksBinary(buf: Buffer): boolean {
  return buf.subarray(0, 8192).includes(0);
}
