import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ChatMessage } from '../model/types';
import type { StepRecord, VerifierDecisionRecord } from '../trajectory/schema';
import type { Trajectory } from '../trajectory/reader';
import { stepObservation } from '../trajectory/observation';
import { actionKey, stripThink } from './candidates';

/**
 * Pairwise preference labels for verifier fine-tuning (the Mid-Harness paper distils a LoRA
 * verifier from such pairs). One JSON object per line; texts have their reasoning stripped
 * because the verifier being trained never sees reasoning either.
 */
export const LABEL_SCHEMA = 'tbrl.preference/1';

export interface HistoryTurn { action: string; observation: string }

export interface PreferenceLabel {
  schema: typeof LABEL_SCHEMA;
  source: 'human' | 'verifier';
  runId?: string;
  taskId?: string;
  step: number;
  instruction: string;
  history: HistoryTurn[];
  chosen: string;
  rejected: string;
  /** Index among the step's candidates; 'edited' when a human rewrote the turn. */
  chosenIndex: number | 'edited';
  rejectedIndex: number;
  human?: { action: 'accept' | 'pick' | 'edit'; editedFrom?: number };
  /** Verifier labels: the mode, and for pairwise the share difference wins[c][r] − wins[r][c] in (0, 1]. */
  verifier?: { mode: string; margin?: number };
}

export interface LabelContext {
  instruction: string;
  history: HistoryTurn[];
  candidates: string[];
  step: number;
  runId?: string;
  taskId?: string;
}

export type HumanChoice =
  | { action: 'accept' | 'pick'; chosen: number }
  | { action: 'edit'; chosen: number; editedText: string };

/** The conversation as turns: each assistant message with the observation(s) that followed it. */
export function historyFromMessages(messages: ChatMessage[]): { instruction: string; history: HistoryTurn[] } {
  const first = messages.findIndex((m) => m.role === 'user');
  const history: HistoryTurn[] = [];
  for (let i = first + 1; i < messages.length && first >= 0; i++) {
    const m = messages[i];
    if (m.role === 'assistant') history.push({ action: stripThink(m.content), observation: '' });
    else if (m.role === 'user' && history.length) {
      const last = history[history.length - 1];
      last.observation = last.observation ? `${last.observation}\n\n${m.content}` : m.content;
    }
  }
  return { instruction: first >= 0 ? messages[first].content : '', history };
}

/** Chosen vs each rejected candidate; candidates that would execute the same thing as the chosen one are not rejections. */
export function humanLabels(ctx: LabelContext, choice: HumanChoice): PreferenceLabel[] {
  const chosenText = choice.action === 'edit' ? choice.editedText : ctx.candidates[choice.chosen];
  if (chosenText === undefined) return [];
  const chosenKey = actionKey(chosenText);
  const seen = new Set<string>([chosenKey]);
  const labels: PreferenceLabel[] = [];
  ctx.candidates.forEach((text, i) => {
    const key = actionKey(text);
    if (seen.has(key)) return;
    seen.add(key);
    labels.push({
      ...base(ctx, 'human'),
      chosen: stripThink(chosenText),
      rejected: stripThink(text),
      chosenIndex: choice.action === 'edit' ? 'edited' : choice.chosen,
      rejectedIndex: i,
      human: choice.action === 'edit' ? { action: 'edit', editedFrom: choice.chosen } : { action: choice.action },
    });
  });
  return labels;
}

/** The verifier's own pairwise judgements (pairwise mode's matrix): winner vs loser per judged pair. */
export function verifierLabels(ctx: LabelContext, decision: VerifierDecisionRecord | undefined): PreferenceLabel[] {
  const m = decision?.matrix;
  if (!decision || !m) return [];
  const labels: PreferenceLabel[] = [];
  for (let i = 0; i < m.length; i++) {
    for (let j = i + 1; j < m.length; j++) {
      if (m[i][j] + m[j][i] === 0 || m[i][j] === m[j][i]) continue;
      const [c, r] = m[i][j] > m[j][i] ? [i, j] : [j, i];
      labels.push({
        ...base(ctx, 'verifier'),
        chosen: stripThink(ctx.candidates[c]),
        rejected: stripThink(ctx.candidates[r]),
        chosenIndex: c,
        rejectedIndex: r,
        verifier: { mode: decision.mode, margin: m[c][r] - m[r][c] },
      });
    }
  }
  return labels;
}

/** Every label a trajectory holds: human choices on steps with `human`, and (unless humanOnly) pairwise verifier judgements. */
export function labelsFromTrajectory(t: Trajectory, options: { humanOnly?: boolean } = {}): PreferenceLabel[] {
  const labels: PreferenceLabel[] = [];
  const history: HistoryTurn[] = [];
  const steps = [...t.steps].sort((a, b) => a.index - b.index);
  for (const step of steps) {
    const ctx: LabelContext = {
      instruction: t.header.task.instruction,
      history: history.map((h) => ({ ...h })),
      candidates: step.candidates.map((c) => c.text),
      step: step.index,
      runId: t.header.runId,
      taskId: t.header.task.id,
    };
    const h = step.human;
    if (h) {
      const choice: HumanChoice = h.action === 'edit' ? { action: 'edit', chosen: h.chosen, editedText: step.chosenText } : { action: h.action, chosen: h.chosen };
      labels.push(...humanLabels(ctx, choice));
    }
    if (!options.humanOnly) labels.push(...verifierLabels(ctx, step.decision));
    history.push({ action: stripThink(step.chosenText), observation: stepObservation(step as Pick<StepRecord, 'actions' | 'parseErrors'>) });
  }
  return labels;
}

export function labelsToJsonl(labels: PreferenceLabel[]): string {
  return labels.map((l) => JSON.stringify(l)).join('\n') + (labels.length ? '\n' : '');
}

/** Appends (the debugger adds labels as the user overrides, one step at a time). */
export async function appendLabels(path: string, labels: PreferenceLabel[]): Promise<void> {
  if (labels.length === 0) return;
  await mkdir(dirname(path), { recursive: true });
  await appendFile(path, labelsToJsonl(labels), 'utf8');
}

function base(ctx: LabelContext, source: 'human' | 'verifier') {
  return {
    schema: LABEL_SCHEMA as typeof LABEL_SCHEMA,
    source,
    ...(ctx.runId ? { runId: ctx.runId } : {}),
    ...(ctx.taskId ? { taskId: ctx.taskId } : {}),
    step: ctx.step,
    instruction: ctx.instruction,
    history: ctx.history,
  };
}
