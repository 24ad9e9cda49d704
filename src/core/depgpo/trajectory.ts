import type { DepgpoRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import { computeDepgpo } from './compute';
import type { DepgpoCommand, DepgpoInput, DepgpoResult } from './types';

/** What DepGPO needs of a trajectory (structurally the reader's `Trajectory`). */
export interface TrajectoryLike {
  header: TrajectoryHeader;
  steps: StepRecord[];
  footer?: TrajectoryFooter;
}

/**
 * Actions that touch the container are graph nodes; todo, scratchpad and finish only change the
 * agent's own notes, so a step made of them has no command and scores 0.
 */
export function isCommandKind(kind: string): boolean {
  return kind === 'bash' || kind.startsWith('file.') || kind.startsWith('search.');
}

/**
 * The text stdout values are matched against: the bash command line, or every string in a file or
 * search action's body (path, content, old/new strings), unescaped so a printed value matches
 * exactly as the agent wrote it.
 */
export function commandText(kind: string, input: Record<string, unknown>): string {
  if (kind === 'bash' && typeof input?.cmd === 'string') return input.cmd;
  const parts: string[] = [];
  const collect = (v: unknown, depth: number): void => {
    if (depth > 4) return;
    if (typeof v === 'string') parts.push(v);
    else if (typeof v === 'number') parts.push(String(v));
    else if (Array.isArray(v)) v.forEach((x) => collect(x, depth + 1));
    else if (v && typeof v === 'object') Object.values(v).forEach((x) => collect(x, depth + 1));
  };
  collect(input, 0);
  return parts.join('\n');
}

/** Commands of the trajectory in execution order, with steps renumbered 0..T-1 in record order. */
export function trajectoryCommands(steps: readonly StepRecord[]): DepgpoCommand[] {
  const commands: DepgpoCommand[] = [];
  steps.forEach((s, t) => {
    (s.actions ?? []).forEach((a, i) => {
      if (!isCommandKind(String(a.kind))) return;
      commands.push({ step: t, action: i, text: commandText(String(a.kind), a.input ?? {}), ...(a.trace ? { trace: a.trace } : {}) });
    });
  });
  return commands;
}

/**
 * Tokens the policy generated in a step: the chosen candidate's completion tokens (what the loss is
 * taken over), else the step's total, else an estimate from the text (~4 characters per token).
 */
export function stepTokenCount(s: StepRecord): number {
  const chosen = s.decision ? s.candidates?.[s.decision.chosen] : s.candidates?.length === 1 ? s.candidates[0] : undefined;
  if (chosen?.completionTokens && chosen.completionTokens > 0) return chosen.completionTokens;
  if (s.usage?.completionTokens && s.usage.completionTokens > 0) return s.usage.completionTokens;
  return Math.max(1, Math.round((s.chosenText ?? '').length / 4));
}

export function depgpoInput(t: TrajectoryLike, beta?: number): DepgpoInput {
  const tracing = t.header.sandbox?.tracing;
  return {
    commands: trajectoryCommands(t.steps),
    instruction: t.header.task?.instruction ?? '',
    ...(t.footer?.verifierTrace ? { verifier: t.footer.verifierTrace } : {}),
    stepTokens: t.steps.map(stepTokenCount),
    ...(tracing ? { tracing: { available: tracing.available, ...(tracing.reason ? { reason: tracing.reason } : {}) } } : {}),
    ...(beta !== undefined ? { beta } : {}),
  };
}

export function depgpoOfTrajectory(t: TrajectoryLike, beta?: number): { input: DepgpoInput; result: DepgpoResult } {
  const input = depgpoInput(t, beta);
  return { input, result: computeDepgpo(input) };
}

/**
 * The footer's record. Its edges are between steps (what the trajectory view shows); command-level
 * edges of one step collapse into one, edges inside a step are dropped, labels are merged.
 */
export function toDepgpoRecord(result: DepgpoResult, commands: DepgpoCommand[]): DepgpoRecord {
  const edges = new Map<string, { from: number; to: number; kind: 'file' | 'stdout'; labels: Set<string> }>();
  for (const e of result.edges) {
    const from = commands[e.from].step;
    const to = commands[e.to].step;
    if (from === to) continue;
    const key = `${from}>${to}:${e.kind}`;
    const edge = edges.get(key) ?? { from, to, kind: e.kind, labels: new Set<string>() };
    e.labels.forEach((l) => edge.labels.add(l));
    edges.set(key, edge);
  }
  return {
    resources: result.resources,
    stepScores: result.stepScores,
    factors: result.factors,
    edges: [...edges.values()].map((e) => ({ from: e.from, to: e.to, kind: e.kind, label: [...e.labels].join(', ') })),
    ...(result.fallback ? { fallback: result.fallback } : {}),
  };
}

/** The scalar reward of a finished run; undefined when it has none (no footer or no reward). */
export function trajectoryReward(t: TrajectoryLike): number | undefined {
  const total = t.footer?.reward?.total;
  return typeof total === 'number' && Number.isFinite(total) ? total : undefined;
}

/** "Passing" for the pilot statistic: full reward, or every weighted test passed. */
export function isPassing(t: TrajectoryLike): boolean {
  const r = t.footer?.reward;
  return !!r && ((typeof r.total === 'number' && r.total >= 1) || r.tests === 1);
}
