import type { StepRecord, TrajectoryFooter } from '../../core/trajectory/schema';
import { trajectoryCommands } from '../../core/depgpo/trajectory';
import { agentVisibleResources, runtimeCount } from '../../core/depgpo/visible';

/**
 * The Variables view as a lazy tree: children are built only when the user expands a node, so a
 * 10,000-step run costs nothing until someone looks.
 */
export interface VarNode {
  name: string;
  value: string;
  children?: () => VarNode[];
}

const MAX_INLINE = 200;

function short(s: string, max = MAX_INLINE): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function leaf(name: string, value: unknown): VarNode {
  return { name, value: value === undefined ? 'undefined' : typeof value === 'string' ? JSON.stringify(short(value, 400)) : String(value) };
}

/** Full text that the user can expand line by line (the Variables view shows one line per value). */
function textNode(name: string, text: string): VarNode {
  const lines = text.split('\n');
  return {
    name,
    value: `${JSON.stringify(short(text))}${lines.length > 1 ? ` (${lines.length} lines)` : ''}`,
    children: lines.length > 1 ? () => lines.map((l, i) => ({ name: String(i + 1), value: l })) : undefined,
  };
}

/** Any JSON value as a tree. */
export function jsonNode(name: string, value: unknown): VarNode {
  if (value === null || typeof value !== 'object') return typeof value === 'string' && value.includes('\n') ? textNode(name, value) : leaf(name, value);
  if (Array.isArray(value)) return { name, value: `Array(${value.length})`, children: () => value.map((v, i) => jsonNode(String(i), v)) };
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return { name, value: `{${entries.slice(0, 4).map(([k]) => k).join(', ')}${entries.length > 4 ? ', …' : ''}}`, children: () => entries.map(([k, v]) => jsonNode(k, v)) };
}

export function stepScope(step: StepRecord): VarNode[] {
  const out: VarNode[] = [
    leaf('index', step.index),
    textNode('action', step.chosenText ?? ''),
    {
      name: 'actions',
      value: (step.actions ?? []).map((a) => a.kind).join(', ') || '(none)',
      children: () =>
        (step.actions ?? []).map((a, i) => ({
          name: `${i}: ${a.kind}`,
          value: `${a.ok ? 'ok' : 'failed'}${a.exitCode !== undefined ? `, exit ${a.exitCode}` : ''}${a.timedOut ? ', timed out' : ''}, ${a.durationMs} ms`,
          children: () => [
            jsonNode('input', a.input),
            textNode('observation', a.observation ?? ''),
            leaf('exitCode', a.exitCode),
            leaf('durationMs', a.durationMs),
            ...(a.trace ? [jsonNode('trace', a.trace)] : []),
          ],
        })),
    },
  ];
  // The exit code that matters is the last command's; file, todo and finish actions have none.
  const last = [...(step.actions ?? [])].reverse().find((a) => a.exitCode !== undefined);
  out.push(textNode('observation', (step.actions ?? []).map((a) => a.observation).filter(Boolean).join('\n') || ''));
  out.push(leaf('exitCode', last?.exitCode));
  out.push(leaf('durationMs', step.durationMs));
  out.push({ name: 'tokens', value: `${step.usage?.promptTokens ?? 0} prompt + ${step.usage?.completionTokens ?? 0} completion`, children: () => [jsonNode('usage', step.usage).children!()].flat() });
  if (step.decision?.margin !== undefined) out.push(leaf('margin', step.decision.margin));
  if (step.parseErrors?.length) out.push(jsonNode('parseErrors', step.parseErrors));
  if (step.phi !== undefined) out.push(leaf('phi', step.phi));
  if (step.human) out.push(jsonNode('human', step.human));
  if (step.checkpoint) out.push(leaf('checkpoint', step.checkpoint));
  return out;
}

export function candidatesScope(step: StepRecord): VarNode[] {
  const d = step.decision;
  const out: VarNode[] = [];
  if (d) out.push(leaf('verifier', `${d.mode}, chose ${d.chosen}${d.margin !== undefined ? `, margin ${d.margin.toFixed(3)}` : ''}`));
  step.candidates.forEach((c, i) => {
    const score = d?.scores[i];
    out.push({
      name: `${i}${d?.chosen === i ? ' (chosen)' : ''}`,
      value: `${score !== undefined ? `score ${score.toFixed(3)} · ` : ''}${c.parses ? '' : '(does not parse) '}${short(c.text, 120)}`,
      children: () => [textNode('text', c.text), leaf('score', score), leaf('parses', c.parses), leaf('completionTokens', c.completionTokens), leaf('logprobSum', c.logprobSum)],
    });
  });
  if (d?.matrix) out.push(jsonNode('pairwise', d.matrix));
  return out;
}

export function stateScope(step: StepRecord): VarNode[] {
  const todos = step.todos ?? [];
  return [
    { name: 'todos', value: `${todos.filter((t) => t.done).length}/${todos.length} done`, children: () => todos.map((t) => ({ name: `${t.done ? '☑' : '☐'} ${t.id}`, value: t.content })) },
    { name: 'scratchpad', value: `${(step.scratchpad ?? []).length} note(s)`, children: () => (step.scratchpad ?? []).map((s, i) => textNode(String(i), s)) },
  ];
}

/** Files this step wrote (from the command trace), each with its diff hunks. */
export function filesScope(step: StepRecord): VarNode[] {
  const out: VarNode[] = [];
  for (const a of step.actions ?? []) {
    for (const w of a.trace?.writes ?? []) out.push(jsonNode(w.path, w));
  }
  return out;
}

export function runScope(footer: TrajectoryFooter | undefined, stepIndex: number, steps: readonly StepRecord[] = []): VarNode[] {
  if (!footer) return [leaf('status', 'running or interrupted: no reward yet')];
  const out: VarNode[] = [leaf('endReason', footer.endReason)];
  const r = footer.reward;
  if (r) {
    out.push({
      name: 'reward',
      value: `total ${r.total.toFixed(3)}`,
      children: () => [
        leaf('total', r.total),
        leaf('tests', r.tests),
        ...(r.testOutcomes ? [{ name: 'testOutcomes', value: `${r.testOutcomes.filter((o) => o.status === 'passed').length}/${r.testOutcomes.length} passed`, children: () => r.testOutcomes!.map((o) => ({ name: o.name, value: `${o.status} (weight ${o.weight})` })) }] : []),
        ...(r.judge ? [jsonNode('judge', r.judge)] : []),
        ...(r.pprs ? [jsonNode('pprs', r.pprs)] : []),
        jsonNode('weights', r.weights),
      ],
    });
  }
  const g = footer.depgpo;
  if (g) {
    out.push(leaf('depgpo.stepScore', g.stepScores[stepIndex]));
    out.push(leaf('depgpo.factor', g.factors[stepIndex]));
    if (g.advantages) out.push(leaf('depgpo.advantage', g.advantages[stepIndex]));
    // What an agent command could have affected; the verifier runtime's own reads are counted apart.
    const e = agentVisibleResources(g.resources, trajectoryCommands(steps));
    const runtime = runtimeCount(e.runtime);
    out.push({
      name: 'depgpo.E',
      value: `${e.files.length} files, ${e.ports.length} ports, ${e.processes.length} processes${runtime ? ` (${runtime})` : ''}`,
      children: () => [jsonNode('files', e.files), jsonNode('ports', e.ports), jsonNode('processes', e.processes), ...(runtime ? [jsonNode('runtime', e.runtime)] : [])],
    });
  }
  return out;
}
