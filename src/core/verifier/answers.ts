/**
 * Helpers for the parsers of verifier answers (each mode's parser lives in its file under
 * modes/). Models decorate their answers (markdown bold, "Candidate B", JSON), so each parser
 * looks for the LAST labelled line first, then simpler forms, and returns undefined rather than
 * guessing — the caller falls back and records why.
 */

/** Markdown emphasis removed, so `**RANKING:**` reads as `RANKING:`. */
export const strip = (s: string) => s.replace(/[*_`#]/g, '');

export function lastMatch(text: string, re: RegExp): RegExpExecArray | undefined {
  let m: RegExpExecArray | null;
  let last: RegExpExecArray | undefined;
  const g = new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g');
  while ((m = g.exec(text)) !== null) last = m;
  return last;
}

export function jsonField(text: string, field: string): unknown {
  const m = lastMatch(text, /\{[^{}]*\}/);
  if (!m) return undefined;
  try {
    return (JSON.parse(m[0]) as Record<string, unknown>)[field];
  } catch {
    return undefined;
  }
}
