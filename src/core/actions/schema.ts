/**
 * The fields of every action, their types and defaults, and the validation that turns a parsed
 * YAML mapping into a normalised body (defaults filled in) or a list of precise problems.
 * Unknown fields are problems too: a misspelt `timeout` silently ignored would run a command
 * with the wrong timeout, which is worse than a clear error.
 */
import { didYouMean } from './suggest';

export const ACTION_TAGS = ['bash', 'todo', 'file', 'search', 'scratchpad', 'finish'] as const;
export type ActionTag = (typeof ACTION_TAGS)[number];

export function isActionTag(name: string): name is ActionTag {
  return (ACTION_TAGS as readonly string[]).includes(name);
}

// ---- Normalised bodies, as the handlers receive them ----
export interface BashBody { cmd: string; block: boolean; timeout_secs?: number; end_after_cmd_success: boolean }
export type TodoOpAction = 'add' | 'complete' | 'delete' | 'view_all';
export interface TodoOp { action: TodoOpAction; content?: string; task_id?: number }
export interface TodoBody { operations: TodoOp[]; view_all: boolean }
export interface FileReadBody { action: 'read'; file_path: string; offset?: number; limit?: number }
export interface FileWriteBody { action: 'write'; file_path: string; content: string }
export interface EditSpec { old_string: string; new_string: string; replace_all: boolean }
export interface FileEditBody extends EditSpec { action: 'edit'; file_path: string }
export interface FileMultiEditBody { action: 'multi_edit'; file_path: string; edits: EditSpec[] }
export interface FileMetadataBody { action: 'metadata'; file_paths: string[] }
export interface GrepBody { action: 'grep'; pattern: string; path?: string; include?: string }
export interface GlobBody { action: 'glob'; pattern: string; path?: string }
export interface LsBody { action: 'ls'; path: string; ignore: string[] }
export interface AddNoteBody { action: 'add_note'; content: string }
export interface ViewNotesBody { action: 'view_all_notes' }
export interface FinishBody { message: string }

export const MAX_METADATA_PATHS = 10;

type FieldType =
  | 'command' // non-blank string
  | 'path' // non-blank string
  | 'needle' // non-empty string (whitespace is a valid thing to search or replace)
  | 'text' // any string, empty allowed
  | 'boolean'
  | 'positiveNumber'
  | 'positiveInt'
  | 'nonNegativeInt'
  | 'pathList'
  | 'patternList'
  | 'edits'
  | 'todoOps';

interface FieldSpec {
  type: FieldType;
  required?: boolean;
  default?: unknown;
}

interface ActionSpec {
  tag: ActionTag;
  kind: string;
  /** Value of the `action` field for tags that have several actions. */
  action?: string;
  fields: Record<string, FieldSpec>;
  /** Cross-field rules after each field is valid. */
  check?: (body: Record<string, unknown>) => string[];
}

const SPECS: ActionSpec[] = [
  {
    tag: 'bash', kind: 'bash',
    fields: {
      cmd: { type: 'command', required: true },
      block: { type: 'boolean', default: true },
      timeout_secs: { type: 'positiveNumber' },
      end_after_cmd_success: { type: 'boolean', default: false },
    },
  },
  {
    tag: 'todo', kind: 'todo',
    fields: { operations: { type: 'todoOps', default: [] }, view_all: { type: 'boolean', default: false } },
    check: (b) => ((b.operations as unknown[]).length === 0 && b.view_all !== true
      ? ['nothing to do: give a non-empty `operations` list, or `view_all: true` to show the list']
      : []),
  },
  { tag: 'file', kind: 'file.read', action: 'read', fields: { file_path: { type: 'path', required: true }, offset: { type: 'nonNegativeInt' }, limit: { type: 'positiveInt' } } },
  { tag: 'file', kind: 'file.write', action: 'write', fields: { file_path: { type: 'path', required: true }, content: { type: 'text', required: true } } },
  {
    tag: 'file', kind: 'file.edit', action: 'edit',
    fields: { file_path: { type: 'path', required: true }, old_string: { type: 'needle', required: true }, new_string: { type: 'text', required: true }, replace_all: { type: 'boolean', default: false } },
    check: (b) => (b.old_string === b.new_string ? ['`old_string` and `new_string` are identical, so the edit would change nothing'] : []),
  },
  { tag: 'file', kind: 'file.multi_edit', action: 'multi_edit', fields: { file_path: { type: 'path', required: true }, edits: { type: 'edits', required: true } } },
  { tag: 'file', kind: 'file.metadata', action: 'metadata', fields: { file_paths: { type: 'pathList', required: true } } },
  { tag: 'search', kind: 'search.grep', action: 'grep', fields: { pattern: { type: 'needle', required: true }, path: { type: 'path' }, include: { type: 'path' } } },
  { tag: 'search', kind: 'search.glob', action: 'glob', fields: { pattern: { type: 'needle', required: true }, path: { type: 'path' } } },
  { tag: 'search', kind: 'search.ls', action: 'ls', fields: { path: { type: 'path', required: true }, ignore: { type: 'patternList', default: [] } } },
  { tag: 'scratchpad', kind: 'scratchpad.add_note', action: 'add_note', fields: { content: { type: 'needle', required: true } } },
  { tag: 'scratchpad', kind: 'scratchpad.view_all_notes', action: 'view_all_notes', fields: {} },
  { tag: 'finish', kind: 'finish', fields: { message: { type: 'text', default: 'Task completed' } } },
];

/** All kinds, for documentation and tests. */
export const ACTION_KINDS: readonly string[] = SPECS.map((s) => s.kind);

export function actionsOf(tag: ActionTag): string[] {
  return SPECS.filter((s) => s.tag === tag && s.action).map((s) => s.action!);
}

export type ValidationResult =
  | { ok: true; kind: string; body: Record<string, unknown> }
  | { ok: false; code: string; kind?: string; problems: string[] };

/** How a YAML value reads in a message: `a number (3)`, `a list`, `null (an empty value)`. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return 'an empty value (null)';
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
  if (typeof v === 'number') return `a number (${v})`;
  if (typeof v === 'boolean') return `a boolean (${v})`;
  if (Array.isArray(v)) return `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (v instanceof Uint8Array) return 'binary data';
  if (typeof v === 'object') return 'a mapping';
  return typeof v;
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

const QUOTE_HINT = ' (put it in quotes if YAML read it as something else)';

function checkScalar(name: string, type: FieldType, v: unknown): string | undefined {
  switch (type) {
    case 'command':
    case 'path':
      if (typeof v !== 'string') return `\`${name}\` must be a string, got ${describeValue(v)}${typeof v === 'number' || typeof v === 'boolean' ? QUOTE_HINT : ''}`;
      if (v.trim() === '') return `\`${name}\` is blank`;
      return undefined;
    case 'needle':
      if (typeof v !== 'string') return `\`${name}\` must be a string, got ${describeValue(v)}${typeof v === 'number' || typeof v === 'boolean' ? QUOTE_HINT : ''}`;
      if (v === '') return `\`${name}\` is empty`;
      return undefined;
    case 'text':
      if (typeof v !== 'string') return `\`${name}\` must be a string, got ${describeValue(v)}${typeof v === 'number' || typeof v === 'boolean' ? QUOTE_HINT : ''}`;
      return undefined;
    case 'boolean':
      return typeof v === 'boolean' ? undefined : `\`${name}\` must be true or false, got ${describeValue(v)}`;
    case 'positiveNumber':
      return typeof v === 'number' && Number.isFinite(v) && v > 0 ? undefined : `\`${name}\` must be a positive number, got ${describeValue(v)}`;
    case 'positiveInt':
      return typeof v === 'number' && Number.isInteger(v) && v > 0 ? undefined : `\`${name}\` must be a whole number of at least 1, got ${describeValue(v)}`;
    case 'nonNegativeInt':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? undefined : `\`${name}\` must be a whole number of at least 0, got ${describeValue(v)}`;
    default:
      return undefined;
  }
}

function checkUnknownKeys(where: string, obj: Record<string, unknown>, allowed: string[]): string[] {
  return Object.keys(obj)
    .filter((k) => !allowed.includes(k))
    .map((k) => `unknown field \`${k}\`${where}${didYouMean(k, allowed)}; allowed: ${allowed.map((a) => `\`${a}\``).join(', ')}`);
}

function checkList(name: string, type: FieldType, v: unknown, out: { problems: string[]; value?: unknown }): void {
  if (!Array.isArray(v)) {
    out.problems.push(`\`${name}\` must be a list (one \`- item\` per line), got ${describeValue(v)}`);
    return;
  }
  if (type === 'pathList' || type === 'patternList') {
    if (type === 'pathList' && v.length === 0) out.problems.push(`\`${name}\` is an empty list; give at least one path`);
    if (type === 'pathList' && v.length > MAX_METADATA_PATHS) out.problems.push(`\`${name}\` has ${v.length} paths; at most ${MAX_METADATA_PATHS} are allowed per action (split it into several actions)`);
    v.forEach((item, i) => {
      const p = checkScalar(`${name}[${i}]`, 'path', item);
      if (p) out.problems.push(p);
    });
    out.value = v;
    return;
  }
  if (type === 'edits') {
    if (v.length === 0) out.problems.push('`edits` is an empty list; give at least one `- old_string: ... new_string: ...`');
    const edits: EditSpec[] = [];
    v.forEach((item, i) => {
      const where = `edits[${i}]`;
      if (!isMapping(item)) {
        out.problems.push(`\`${where}\` must be a mapping with \`old_string\` and \`new_string\`, got ${describeValue(item)}`);
        return;
      }
      const before = out.problems.length;
      out.problems.push(...checkUnknownKeys(` in \`${where}\``, item, ['old_string', 'new_string', 'replace_all']));
      for (const [f, t] of [['old_string', 'needle'], ['new_string', 'text']] as const) {
        if (item[f] === undefined) out.problems.push(`\`${where}\` is missing \`${f}\``);
        else {
          const p = checkScalar(`${where}.${f}`, t, item[f]);
          if (p) out.problems.push(p);
        }
      }
      const ra = item.replace_all ?? false;
      const p = checkScalar(`${where}.replace_all`, 'boolean', ra);
      if (p) out.problems.push(p);
      if (out.problems.length === before) {
        if (item.old_string === item.new_string) out.problems.push(`\`${where}\`: \`old_string\` and \`new_string\` are identical, so the edit would change nothing`);
        edits.push({ old_string: item.old_string as string, new_string: item.new_string as string, replace_all: ra as boolean });
      }
    });
    out.value = edits;
    return;
  }
  // todoOps
  const ops: TodoOp[] = [];
  const actions: TodoOpAction[] = ['add', 'complete', 'delete', 'view_all'];
  v.forEach((item, i) => {
    const where = `operations[${i}]`;
    if (!isMapping(item)) {
      out.problems.push(`\`${where}\` must be a mapping like \`- action: add\` / \`  content: "..."\`, got ${describeValue(item)}`);
      return;
    }
    const action = item.action;
    if (action === undefined || action === null) {
      out.problems.push(`\`${where}\` is missing \`action\` (one of ${actions.join(', ')})`);
      return;
    }
    if (typeof action !== 'string' || !(actions as string[]).includes(action)) {
      out.problems.push(`\`${where}.action\` is ${describeValue(action)}; it must be one of ${actions.join(', ')}${typeof action === 'string' ? didYouMean(action, actions) : ''}`);
      return;
    }
    const a = action as TodoOpAction;
    const allowed = a === 'add' ? ['action', 'content'] : a === 'view_all' ? ['action'] : ['action', 'task_id'];
    const before = out.problems.length;
    out.problems.push(...checkUnknownKeys(` in \`${where}\` (a \`${a}\` operation)`, item, allowed));
    if (a === 'add') {
      if (item.content === undefined || item.content === null) out.problems.push(`\`${where}\` (add) is missing \`content\``);
      else {
        const p = checkScalar(`${where}.content`, 'needle', item.content);
        if (p) out.problems.push(p);
      }
    } else if (a !== 'view_all') {
      if (item.task_id === undefined || item.task_id === null) out.problems.push(`\`${where}\` (${a}) is missing \`task_id\``);
      else {
        const p = checkScalar(`${where}.task_id`, 'positiveInt', item.task_id);
        if (p) out.problems.push(p);
      }
    }
    if (out.problems.length === before) {
      ops.push(a === 'add' ? { action: a, content: item.content as string } : a === 'view_all' ? { action: a } : { action: a, task_id: item.task_id as number });
    }
  });
  out.value = ops;
}

function validateFields(spec: ActionSpec, obj: Record<string, unknown>): ValidationResult {
  const problems: string[] = [];
  const body: Record<string, unknown> = spec.action ? { action: spec.action } : {};
  const allowed = [...(spec.action ? ['action'] : []), ...Object.keys(spec.fields)];
  problems.push(...checkUnknownKeys(spec.action ? ` for \`${spec.kind}\`` : ` for <${spec.tag}>`, obj, allowed));
  let missing = false;
  let wrongType = false;
  for (const [name, f] of Object.entries(spec.fields)) {
    const v = obj[name];
    if (v === undefined || v === null) {
      if (f.required) {
        missing = true;
        problems.push(v === null ? `\`${name}\` is empty; it is required` : `missing required field \`${name}\``);
      } else if (f.default !== undefined) body[name] = Array.isArray(f.default) ? [...f.default] : f.default;
      continue;
    }
    if (f.type === 'pathList' || f.type === 'patternList' || f.type === 'edits' || f.type === 'todoOps') {
      const out: { problems: string[]; value?: unknown } = { problems: [] };
      checkList(name, f.type, v, out);
      if (out.problems.length > 0) wrongType = true;
      problems.push(...out.problems);
      body[name] = out.value;
      continue;
    }
    const p = checkScalar(name, f.type, v);
    if (p) {
      wrongType = true;
      problems.push(p);
    } else body[name] = v;
  }
  if (problems.length === 0 && spec.check) problems.push(...spec.check(body));
  if (problems.length > 0) {
    const unknownOnly = !missing && !wrongType && problems.every((p) => p.startsWith('unknown field'));
    return { ok: false, kind: spec.kind, code: missing ? 'missing-field' : wrongType ? 'wrong-type' : unknownOnly ? 'unknown-field' : 'invalid-value', problems };
  }
  return { ok: true, kind: spec.kind, body };
}

/** Validate a YAML mapping for `tag`. */
export function validateAction(tag: ActionTag, obj: Record<string, unknown>): ValidationResult {
  const specs = SPECS.filter((s) => s.tag === tag);
  if (tag === 'todo' && 'action' in obj && !('operations' in obj)) {
    // The single-operation form is the most common todo mistake; say what the batch form is.
    return { ok: false, code: 'invalid-value', kind: 'todo', problems: ['<todo> takes a list of operations, not a single `action`: write `operations:` and under it one `- action: add` (with `content:`) or `- action: complete` (with `task_id:`) per operation'] };
  }
  if (specs.length === 1 && !specs[0]!.action) return validateFields(specs[0]!, obj);
  const names = specs.map((s) => s.action!);
  const action = obj.action;
  if (action === undefined || action === null) {
    return { ok: false, code: 'missing-action', problems: [`missing field \`action\`: <${tag}> needs one of ${names.join(', ')}`] };
  }
  const spec = typeof action === 'string' ? specs.find((s) => s.action === action) : undefined;
  if (!spec) {
    const hint = typeof action === 'string' ? didYouMean(action, names) : '';
    const guess = typeof action === 'string' ? specs.find((s) => hint.includes(`\`${s.action}\``))?.kind : undefined;
    return { ok: false, code: 'unknown-action', kind: guess, problems: [`unknown <${tag}> action ${typeof action === 'string' ? `\`${action.slice(0, 60)}\`` : describeValue(action)}${hint}; it must be one of ${names.join(', ')}`] };
  }
  return validateFields(spec, obj);
}
