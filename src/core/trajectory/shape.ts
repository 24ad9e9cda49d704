import { TbrlError } from '../errors';

/**
 * Shape checks for trajectory records read from disk. A trajectory may come from anywhere (a
 * shared file, a hand-edited one): well-formed JSON of the wrong shape must give an error naming
 * the line and the field, not a TypeError deep inside replay, graph, credit or export-labels.
 */
type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array';

function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

class ShapeChecker {
  constructor(private readonly source: string, private readonly line: number) {}

  fail(field: string, want: string, got: unknown): never {
    throw new TbrlError(
      'trajectory-shape',
      `${this.source}: line ${this.line}: field ${field} must be ${want}, got ${kindOf(got)}${typeof got === 'string' || typeof got === 'number' ? ` ${JSON.stringify(got).slice(0, 40)}` : ''}.`,
      'The trajectory was edited or written by another tool; pass a trajectory.jsonl written by `tbrl run`, or repair that field.',
    );
  }

  need(obj: Record<string, unknown>, field: string, kind: Kind, optional = false, path = field): unknown {
    const v = obj[field];
    if (v === undefined && optional) return v;
    if (kindOf(v) !== kind || (kind === 'number' && !Number.isFinite(v))) this.fail(path, kind === 'object' ? 'an object' : kind === 'array' ? 'an array' : `a ${kind}`, v);
    return v;
  }
}

export function checkHeaderShape(rec: Record<string, unknown>, source: string, line: number): void {
  const c = new ShapeChecker(source, line);
  const task = c.need(rec, 'task', 'object') as Record<string, unknown>;
  for (const k of ['id', 'instruction']) c.need(task, k, 'string', false, `task.${k}`);
  c.need(rec, 'policy', 'object', true);
  c.need(rec, 'config', 'object', true);
}

export function checkStepShape(rec: Record<string, unknown>, source: string, line: number): void {
  const c = new ShapeChecker(source, line);
  c.need(rec, 'index', 'number');
  const actions = c.need(rec, 'actions', 'array') as unknown[];
  actions.forEach((a, i) => {
    if (kindOf(a) !== 'object') c.fail(`actions[${i}]`, 'an object', a);
    const action = a as Record<string, unknown>;
    c.need(action, 'kind', 'string', false, `actions[${i}].kind`);
    c.need(action, 'observation', 'string', true, `actions[${i}].observation`);
    c.need(action, 'input', 'object', true, `actions[${i}].input`);
    const trace = c.need(action, 'trace', 'object', true, `actions[${i}].trace`) as Record<string, unknown> | undefined;
    if (trace) for (const k of ['reads', 'writes', 'stdoutValues', 'ports', 'processes']) c.need(trace, k, 'array', true, `actions[${i}].trace.${k}`);
  });
  const candidates = c.need(rec, 'candidates', 'array', true) as unknown[] | undefined;
  candidates?.forEach((cand, i) => {
    if (kindOf(cand) !== 'object') c.fail(`candidates[${i}]`, 'an object', cand);
    c.need(cand as Record<string, unknown>, 'text', 'string', false, `candidates[${i}].text`);
  });
  c.need(rec, 'chosenText', 'string', true);
  c.need(rec, 'parseErrors', 'array', true);
  c.need(rec, 'todos', 'array', true);
  c.need(rec, 'scratchpad', 'array', true);
  const usage = c.need(rec, 'usage', 'object', true) as Record<string, unknown> | undefined;
  if (usage) for (const k of ['promptTokens', 'completionTokens']) c.need(usage, k, 'number', true, `usage.${k}`);
}

export function checkFooterShape(rec: Record<string, unknown>, source: string, line: number): void {
  const c = new ShapeChecker(source, line);
  c.need(rec, 'steps', 'number', true);
  c.need(rec, 'endReason', 'string', true);
  const reward = c.need(rec, 'reward', 'object', true) as Record<string, unknown> | undefined;
  if (reward) {
    c.need(reward, 'testOutcomes', 'array', true, 'reward.testOutcomes');
  }
  c.need(rec, 'depgpo', 'object', true);
  c.need(rec, 'verifierTrace', 'object', true);
  c.need(rec, 'usage', 'object', true);
}
