import { LineCounter, parseDocument, isMap, isSeq, type Node } from 'yaml';
import type * as SmolToml from 'smol-toml' with { 'resolution-mode': 'import' };
import { TbrlError } from '../errors';

// smol-toml's types describe its ESM build, which a CommonJS module cannot import statically;
// its package also ships a CommonJS build under the same name, which require() picks.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parse: parseToml, TomlError } = require('smol-toml') as typeof SmolToml;

/** A parsed config file that can say on which line a field was written, for error messages. */
export interface SourceDoc {
  file: string;
  data: Record<string, unknown>;
  /** Comment lines before the first field (e.g. Terminal-Bench's canary line), without '#'. */
  headerComment?: string;
  /** 1-based line of the field at `path`, or undefined when it is not written in the file. */
  lineOf(path: string[]): number | undefined;
}

function where(file: string, line: number | undefined): string {
  return line === undefined ? file : `${file}:${line}`;
}

/** `list: true` accepts a top-level sequence, exposed as `data.items` (solution.yaml is a list). */
export function parseYamlDoc(file: string, text: string, example: string, options: { list?: boolean } = {}): SourceDoc {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const line = first.linePos?.[0]?.line ?? lineCounter.linePos(first.pos[0]).line;
    throw new TbrlError(
      'TASK_FILE_MALFORMED',
      `${where(file, line)}: ${file.split('/').pop()} is not valid YAML: ${first.message.split('\n')[0]}`,
      `Fix the YAML syntax at that line (indent block values, quote strings containing ': ' or '#'). A valid file looks like:\n${example}`,
    );
  }
  let parsed: unknown;
  try {
    // toJS resolves aliases: an alias without its anchor, or one that expands too far, throws here.
    parsed = doc.toJS() ?? (options.list ? [] : {});
  } catch (err) {
    throw new TbrlError(
      'TASK_FILE_MALFORMED',
      `${where(file, 1)}: ${file.split('/').pop()} cannot be read as YAML: ${(err as Error).message.split('\n')[0].trim()}`,
      `Define each anchor (&name) before its alias (*name), or write the value out in full. A valid file looks like:\n${example}`,
    );
  }
  const data = options.list && Array.isArray(parsed) ? { items: parsed } : parsed;
  if (!isPlainObject(data)) {
    throw new TbrlError('TASK_FILE_MALFORMED', `${where(file, 1)}: expected a mapping of fields at the top level`, `Write "key: value" lines. Example:\n${example}`);
  }
  return {
    file,
    data,
    headerComment: doc.commentBefore ?? firstKeyComment(doc.contents),
    lineOf(path) {
      let node: Node | null | undefined = doc.contents as Node | null;
      for (const key of options.list ? path.slice(1) : path) {
        if (!isMap(node) && !isSeq(node)) return undefined;
        const next: unknown = node.get(isSeq(node) ? Number(key) : key, true);
        if (next === undefined) return undefined;
        node = next as Node;
      }
      const offset = node?.range?.[0];
      return offset === undefined ? undefined : lineCounter.linePos(offset).line;
    },
  };
}

/** A comment right above the first key belongs to that key in `yaml`'s tree; for us it is the file's header. */
function firstKeyComment(contents: unknown): string | undefined {
  if (!isMap(contents)) return undefined;
  const key = contents.items[0]?.key as { commentBefore?: string | null } | undefined;
  return key?.commentBefore ?? undefined;
}

export function parseTomlDoc(file: string, text: string, example: string): SourceDoc {
  let data: Record<string, unknown>;
  try {
    data = toPlain(parseToml(text)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof TomlError) {
      throw new TbrlError(
        'TASK_FILE_MALFORMED',
        `${where(file, err.line)}: ${file.split('/').pop()} is not valid TOML: ${err.message.split('\n')[0]}`,
        `Fix the TOML syntax at that line (strings need quotes, one key per line, [section] headers). A valid file looks like:\n${example}`,
        { cause: err },
      );
    }
    throw err;
  }
  const lines = text.split(/\r?\n/);
  const leading: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('#')) break;
    leading.push(line.slice(1));
  }
  return {
    file,
    data,
    headerComment: leading.length > 0 ? leading.join('\n') : undefined,
    lineOf(path) {
      // TOML has no position API in smol-toml: find the key under its [table] header by scanning.
      const table = path.slice(0, -1).join('.');
      const key = path[path.length - 1];
      let current = '';
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i].trim();
        const header = /^\[\[?\s*([^\]]+?)\s*\]\]?/.exec(line);
        if (header) {
          current = header[1].replace(/\s*\.\s*/g, '.').replace(/"/g, '');
          if (current === path.join('.')) return i + 1;
          continue;
        }
        const assign = /^("?)([A-Za-z0-9_.-]+)\1\s*=/.exec(line);
        if (!assign) continue;
        const full = current ? `${current}.${assign[2]}` : assign[2];
        if (full === path.join('.') || (current === table && assign[2] === key)) return i + 1;
      }
      return undefined;
    },
  };
}

/** smol-toml makes inline tables with a null prototype; give every table an ordinary one. */
function toPlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toPlain);
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** Typed access to a SourceDoc's fields; a wrong type names file, line and field. */
export class FieldReader {
  constructor(
    readonly doc: SourceDoc,
    private readonly example: string,
  ) {}

  private raw(path: string[]): unknown {
    let value: unknown = this.doc.data;
    for (const key of path) {
      if (!isPlainObject(value)) return undefined;
      value = value[key];
    }
    return value;
  }

  fail(path: string[], problem: string, fix?: string): never {
    const line = this.doc.lineOf(path) ?? this.doc.lineOf(path.slice(0, -1));
    throw new TbrlError(
      'TASK_FIELD_INVALID',
      `${where(this.doc.file, line)}: field '${path.join('.')}' ${problem}`,
      fix ?? `Correct '${path.join('.')}'. A valid file looks like:\n${this.example}`,
    );
  }

  table(path: string[]): Record<string, unknown> | undefined {
    const value = this.raw(path);
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value)) this.fail(path, `must be a table/mapping, got ${describe(value)}`);
    return value;
  }

  string(path: string[]): string | undefined {
    const value = this.raw(path);
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string') return value;
    // YAML turns `difficulty: 3` or dates into non-strings; those are still meaningful text.
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return this.fail(path, `must be a string, got ${describe(value)}`);
  }

  requiredString(path: string[], fix: string): string {
    const value = this.string(path);
    if (value === undefined || value.trim() === '') this.fail(path, 'is required and must be a non-empty string', fix);
    return value;
  }

  number(path: string[], options: { positive?: boolean } = {}): number | undefined {
    const value = this.raw(path);
    if (value === undefined || value === null) return undefined;
    const n = typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : NaN;
    if (!Number.isFinite(n)) this.fail(path, `must be a number, got ${describe(value)}`);
    if (options.positive && n <= 0) this.fail(path, `must be greater than 0, got ${n}`);
    return n;
  }

  boolean(path: string[]): boolean | undefined {
    const value = this.raw(path);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') this.fail(path, `must be true or false, got ${describe(value)}`);
    return value;
  }

  stringArray(path: string[]): string[] | undefined {
    const value = this.raw(path);
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' && typeof v !== 'number')) {
      this.fail(path, `must be a list of strings, got ${describe(value)}`);
    }
    return value.map(String);
  }
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isPlainObject(value)) return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}


/** An author with only the parts that are set, or undefined when neither is. */
export function authorOf(name: string | undefined, email: string | undefined): { name?: string; email?: string } | undefined {
  if (name === undefined && email === undefined) return undefined;
  return { ...(name !== undefined ? { name } : {}), ...(email !== undefined ? { email } : {}) };
}
