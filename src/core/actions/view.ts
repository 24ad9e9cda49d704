/** `file.read` output: `cat -n` style numbered lines, a window by offset/limit, long lines cut. */
import { numberLines } from './edit';

export const DEFAULT_READ_LIMIT = 2000;
export const MAX_LINE_CHARS = 2000;

export interface ReadView {
  text: string;
  firstLine: number;
  lastLine: number;
  totalLines: number;
}

export function splitLines(content: string): string[] {
  if (content === '') return [];
  const lines = content.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** `offset` is the 1-based first line (0 counts as 1); `limit` the number of lines. */
export function renderRead(content: string, offset?: number, limit?: number): ReadView {
  const lines = splitLines(content);
  const first = Math.max(1, offset ?? 1);
  const count = limit ?? DEFAULT_READ_LIMIT;
  const slice = lines.slice(first - 1, first - 1 + count).map((l) => {
    const noCr = l.endsWith('\r') ? l.slice(0, -1) : l;
    return noCr.length > MAX_LINE_CHARS ? `${noCr.slice(0, MAX_LINE_CHARS)}… [line cut at ${MAX_LINE_CHARS} of ${noCr.length} characters]` : noCr;
  });
  return {
    text: slice.length > 0 ? numberLines(slice, first, Infinity) : '',
    firstLine: first,
    lastLine: first + slice.length - 1,
    totalLines: lines.length,
  };
}
