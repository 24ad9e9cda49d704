import { computeDepgpo } from '../depgpo/compute';
import type { DepgpoCommand, DepgpoResult } from '../depgpo/types';
import type { VerifierTrace } from '../trace/types';
import type { DepgpoRecord, StepRecord } from '../trajectory/schema';

/** Action kinds that touch the container and are therefore DepGPO nodes (todo, scratchpad and finish are not). */
function isCommand(kind: string): boolean {
  return kind === 'bash' || kind.startsWith('file.') || kind.startsWith('search.');
}

/** The text a later command's stdout values are matched against: the bash command, or the action's body. */
function commandText(kind: string, input: Record<string, unknown>): string {
  if (kind === 'bash' && typeof input.cmd === 'string') return input.cmd;
  return JSON.stringify(input);
}

export function depgpoCommands(steps: StepRecord[]): DepgpoCommand[] {
  const commands: DepgpoCommand[] = [];
  for (const s of steps) {
    s.actions.forEach((a, i) => {
      if (!isCommand(a.kind)) return;
      commands.push({ step: s.index, action: i, text: commandText(a.kind, a.input), ...(a.trace ? { trace: a.trace } : {}) });
    });
  }
  return commands;
}

/** Runs DepGPO over a finished run and shapes the result as the trajectory footer records it. */
export function depgpoForRun(args: { steps: StepRecord[]; instruction: string; verifier?: VerifierTrace; tracing?: { available: boolean; reason?: string } }): { record: DepgpoRecord; result: DepgpoResult } {
  const commands = depgpoCommands(args.steps);
  // Steps are numbered from the first recorded step; DepGPO wants one entry per step in order.
  const base = args.steps[0]?.index ?? 0;
  const result = computeDepgpo({
    commands: commands.map((c) => ({ ...c, step: c.step - base })),
    instruction: args.instruction,
    verifier: args.verifier,
    stepTokens: args.steps.map((s) => Math.max(1, s.usage.completionTokens || s.chosenText.length / 4)),
    tracing: args.tracing,
  });
  // The footer's graph is at step level (what the trajectory and the editor show); labels are joined.
  const edges = new Map<string, DepgpoRecord['edges'][number]>();
  for (const e of result.edges) {
    const from = commands[e.from].step;
    const to = commands[e.to].step;
    if (from === to) continue;
    const key = `${from}>${to}:${e.kind}`;
    const prev = edges.get(key);
    const label = e.labels.join(', ');
    if (prev) prev.label = [...new Set([...prev.label.split(', '), ...e.labels])].join(', ');
    else edges.set(key, { from, to, kind: e.kind, label });
  }
  return {
    result,
    record: {
      resources: result.resources,
      stepScores: result.stepScores,
      factors: result.factors,
      edges: [...edges.values()],
      ...(result.fallback ? { fallback: result.fallback } : {}),
    },
  };
}
