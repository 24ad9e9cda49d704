import { TbrlError } from '../errors';

/** One CSV record with the 1-based line its first field starts on (records may span lines). */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/**
 * RFC 4180 CSV: comma-separated, fields optionally in double quotes, `""` inside quotes is a quote,
 * quoted fields may hold commas and newlines; CRLF or LF line ends; a UTF-8 BOM is ignored.
 */
export function parseCsv(text: string, file = 'CSV'): CsvRecord[] {
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let quoted = false;
  let quoteLine = 0;
  let afterQuote = false;
  /** A lone `""` is a record with one empty field, unlike a blank line. */
  let quotedInRecord = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRecord = () => {
    fields.push(field);
    // A blank line is no record (a trailing newline at the end of the file is the common case).
    if (!(fields.length === 1 && fields[0] === '' && !quotedInRecord)) records.push({ line: recordLine, fields });
    fields = [];
    field = '';
    afterQuote = false;
    quotedInRecord = false;
  };
  for (; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
          afterQuote = true;
        }
      } else {
        if (c === '\n') line++;
        field += c;
      }
      continue;
    }
    if (c === ',') {
      fields.push(field);
      field = '';
      afterQuote = false;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else if (c === '"' && field === '' && !afterQuote) {
      quoted = true;
      quotedInRecord = true;
      quoteLine = line;
    } else if (afterQuote) {
      throw new TbrlError(
        'CSV_MALFORMED',
        `${file}:${line}: unexpected character ${JSON.stringify(c)} after a closing quote`,
        'Inside a quoted field write a quote as two quotes (""), and end the field right after the closing quote.',
      );
    } else {
      field += c;
    }
  }
  if (quoted) {
    throw new TbrlError('CSV_MALFORMED', `${file}:${quoteLine}: a quoted field is never closed`, 'Close the field with a double quote; write quotes inside it as "".');
  }
  if (field !== '' || fields.length > 0 || quotedInRecord) endRecord();
  return records;
}

/** Records as objects keyed by the header row. */
export function parseCsvObjects(text: string, file = 'CSV'): { header: string[]; rows: { line: number; values: Record<string, string>; width: number }[] } {
  const [head, ...rest] = parseCsv(text, file);
  if (!head) throw new TbrlError('CSV_EMPTY', `${file}: the file is empty`, 'Export the dataset with its header row (task_id,difficulty,...).');
  const header = head.fields.map((h) => h.trim());
  return {
    header,
    rows: rest.map((r) => ({ line: r.line, width: r.fields.length, values: Object.fromEntries(header.map((h, i) => [h, r.fields[i] ?? ''])) })),
  };
}
