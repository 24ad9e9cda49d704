/**
 * Bash ANSI-C quoting ($'...') of arbitrary text, byte by byte. The command reaches the persistent
 * shell as one line that cannot be unbalanced by the command's own quotes, newlines or control
 * characters, so a syntax error inside it is reported by `eval` and never swallows the framing.
 */
export function ansiCQuote(text: string | Buffer): string {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let out = "$'";
  for (const b of bytes) {
    if (b === 0x27) out += "\\'";
    else if (b === 0x5c) out += '\\\\';
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return out + "'";
}
