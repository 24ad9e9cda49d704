/**
 * Byte bounds for everything shown to the agent. Observations go back into the model's context,
 * so a single runaway output must never crowd out the conversation; the head and the tail are
 * kept because errors usually sit at the end and the command's purpose at the start.
 */

export interface Bounded {
  text: string;
  /** Bytes removed (0 when the text fitted). */
  droppedBytes: number;
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Largest index <= i that does not fall inside a UTF-8 multi-byte sequence. */
function charStartAtOrBefore(buf: Buffer, i: number): number {
  let j = Math.max(0, Math.min(i, buf.length));
  while (j > 0 && j < buf.length && (buf[j]! & 0xc0) === 0x80) j--;
  return j;
}

/** Smallest index >= i that does not fall inside a UTF-8 multi-byte sequence. */
function charStartAtOrAfter(buf: Buffer, i: number): number {
  let j = Math.max(0, Math.min(i, buf.length));
  while (j < buf.length && (buf[j]! & 0xc0) === 0x80) j++;
  return j;
}

/** Cut to at most `maxBytes` bytes without splitting a character. */
export function cutBytes(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  return buf.subarray(0, charStartAtOrBefore(buf, Math.max(0, maxBytes))).toString('utf8');
}

function omissionMarker(dropped: number): string {
  return `\n[... ${dropped} bytes omitted ...]\n`;
}

/**
 * Keep at most `maxBytes` bytes of `text`: head and tail with a marker that says how much was
 * dropped. The result never exceeds `maxBytes` (when even the marker does not fit, a plain cut).
 */
export function boundText(text: string, maxBytes: number): Bounded {
  const max = Math.max(0, Math.floor(maxBytes));
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return { text, droppedBytes: 0 };
  // The marker's length depends on the count it prints; the longest possible count bounds it.
  const markerBudget = byteLength(omissionMarker(buf.length));
  if (max < markerBudget + 2) {
    const kept = cutBytes(text, max);
    return { text: kept, droppedBytes: buf.length - byteLength(kept) };
  }
  const avail = max - markerBudget;
  const headEnd = charStartAtOrBefore(buf, Math.ceil(avail / 2));
  const tailStart = charStartAtOrAfter(buf, buf.length - Math.floor(avail / 2));
  const dropped = tailStart - headEnd;
  const out = buf.subarray(0, headEnd).toString('utf8') + omissionMarker(dropped) + buf.subarray(tailStart).toString('utf8');
  return { text: out, droppedBytes: dropped };
}

/**
 * `<tag>\nbody\n</tag>` within `maxBytes` in total: the body is shortened, never the wrapper,
 * so the agent always sees which kind of output it got.
 */
export function wrapBounded(tag: string, body: string, maxBytes: number): string {
  const open = `<${tag}>\n`;
  const close = `\n</${tag}>`;
  const overhead = byteLength(open) + byteLength(close);
  if (maxBytes <= overhead) return cutBytes(open + body + close, maxBytes);
  return open + boundText(body, maxBytes - overhead).text + close;
}

/**
 * Like `wrapBounded`, but `trailer` (exit code, how to read on, ...) is kept whole and only
 * `main` is shortened: the facts about the output matter more than its middle.
 */
export function wrapWithTrailer(tag: string, main: string, trailer: string, maxBytes: number): string {
  if (!trailer) return wrapBounded(tag, main, maxBytes);
  const overhead = byteLength(`<${tag}>\n\n</${tag}>`) + byteLength(trailer) + 1;
  if (maxBytes <= overhead + 32) return wrapBounded(tag, `${main}\n${trailer}`, maxBytes);
  const body = main === '' ? trailer : `${boundText(main, maxBytes - overhead).text}\n${trailer}`;
  return wrapBounded(tag, body, maxBytes);
}

/** Clip an excerpt for quoting inside a message (characters, not bytes: these are short). */
export function clipChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let head = Math.ceil(maxChars * 0.7);
  let tail = Math.max(0, maxChars - head);
  // Never split a surrogate pair: half an emoji would be a lone surrogate in the observation.
  if (/[\uD800-\uDBFF]/.test(text[head - 1] ?? '')) head--;
  if (tail > 0 && /[\uDC00-\uDFFF]/.test(text[text.length - tail] ?? '')) tail--;
  return `${text.slice(0, head)}\n[... ${text.length - head - tail} characters omitted ...]\n${tail > 0 ? text.slice(text.length - tail) : ''}`;
}
