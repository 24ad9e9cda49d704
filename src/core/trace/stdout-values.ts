/**
 * Values a command printed that a later command may reuse (DepGPO stdout edges): URLs, file
 * paths, ports, ids. Precision matters more than recall — every false value is a potential false
 * edge — so bare words need a recognisable shape (an extension, a slash, a host before a port).
 */

export const MAX_STDOUT_VALUES = 64;
/** Output beyond this is not scanned: the sandbox already caps output; this caps our regex work. */
const MAX_SCAN_CHARS = 256 * 1024;

const URL_RE = /\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}:\/\/[^\s"'<>`)\]}]+/g;
const UUID_RE = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
const HEX_ID_RE = /\b[0-9a-f]{7,64}\b/g;
const ABS_PATH_RE = /(?<![\w.~/:-])\/(?:[\w.@+,=-]+\/)*[\w.@+,=-]+\/?/g;
const REL_PATH_RE = /(?<![\w./~:-])(?:\.{1,2}\/)?(?:[\w.@+-]+\/)+[\w.@+-]+|(?<![\w./~:-])\.{1,2}\/[\w.@+-]+/g;
const FILE_NAME_RE = /(?<![\w./-])[\w-][\w.-]*\.(?:py|js|mjs|cjs|ts|tsx|jsx|c|h|cc|cpp|hpp|go|rs|java|kt|rb|php|pl|sh|bash|json|jsonl|yaml|yml|toml|ini|cfg|conf|txt|md|csv|tsv|log|html|css|sql|db|sqlite|xml|lock|out|pid|sock|tar|gz|tgz|zip|whl|pem|key|crt|env)\b/g;
const HOST_PORT_RE = /(?<![\w.:-])(localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]*\]|\*|[A-Za-z][\w-]*(?:\.[\w-]+)*)?:(\d{2,5})\b(?![:.]\d)/g;
const PORT_WORD_RE = /\bport\s*[=:]?\s*(\d{2,5})\b/gi;
const PID_RE = /\b(?:pid|PID|process(?: id)?|Process(?: ID)?)\s*[=:#]?\s*(\d{2,7})\b|^\[\d+\]\s+(\d{2,7})$/gm;

export function extractStdoutValues(output: string, max = MAX_STDOUT_VALUES): string[] {
  let text = output.length > MAX_SCAN_CHARS ? output.slice(0, MAX_SCAN_CHARS) : output;
  const seen = new Set<string>();
  const values: string[] = [];
  const add = (v: string | undefined): void => {
    if (!v || seen.has(v) || values.length >= max) return;
    seen.add(v);
    values.push(v);
  };

  for (const m of text.matchAll(URL_RE)) add(trimPunctuation(m[0]));
  // URLs would otherwise also yield their paths, hosts and ports as separate values.
  text = text.replace(URL_RE, ' ');
  for (const m of text.matchAll(UUID_RE)) add(m[0]);
  text = text.replace(UUID_RE, ' ');

  for (const m of text.matchAll(ABS_PATH_RE)) {
    const p = trimPunctuation(m[0]);
    if (p.length > 2 && /[A-Za-z]/.test(p)) add(p);
  }
  for (const m of text.matchAll(REL_PATH_RE)) {
    const p = trimPunctuation(m[0]);
    // "1.2/3" or "and/or" are not paths; require a letter and either ./ or an extension-like tail.
    if (/[A-Za-z]/.test(p) && (p.startsWith('./') || p.startsWith('../') || /\.[A-Za-z]\w*$/.test(p) || /\/[\w-]+\/[\w.-]+$/.test(p))) add(p);
  }
  for (const m of text.matchAll(FILE_NAME_RE)) add(m[0]);

  for (const m of text.matchAll(HOST_PORT_RE)) {
    const port = Number(m[2]);
    const host = m[1];
    // "main.py:12" is a line number, "12:30" a time; small numbers count only after a real host.
    const explicitHost = host !== undefined && /^(localhost|\d{1,3}(\.\d{1,3}){3}|\[.*\]|\*)$/.test(host);
    if (port >= 1 && port <= 65535 && (explicitHost || (host !== undefined && port >= 1024 && !/\.\w{1,4}$/.test(host)))) add(String(port));
  }
  for (const m of text.matchAll(PORT_WORD_RE)) {
    const port = Number(m[1]);
    if (port >= 1 && port <= 65535) add(String(port));
  }
  for (const m of text.matchAll(PID_RE)) add(m[1] ?? m[2]);
  for (const m of text.matchAll(HEX_ID_RE)) {
    // A hex id mixes digits and letters; all-digit runs are numbers, all-letter runs are words ("deadbeef" aside).
    if (/\d/.test(m[0]) && /[a-f]/.test(m[0])) add(m[0]);
  }
  return values;
}

function trimPunctuation(s: string): string {
  return s.replace(/[.,;:!?'"]+$/, '');
}
