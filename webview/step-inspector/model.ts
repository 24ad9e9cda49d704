import type { RewardRecord, StepRecord, TrajectoryFooter } from '../../src/core/trajectory/schema';
import type { PendingTurnInfo } from '../../src/core/debug/turn';

/**
 * The step inspector's view of one step, computed on the extension side from trajectory records
 * (pure: no DOM, no vscode) so the webview only draws and a unit test can check every number.
 */
export interface CandidateView {
  index: number;
  text: string;
  /** Verifier score; undefined when the step had no verifier decision. */
  score?: number;
  /** Rank by score, 1 = best. */
  rank?: number;
  parses: boolean;
  tokens?: number;
  /** The verifier's pick. */
  chosen: boolean;
  /** The turn that actually ran (differs from `chosen` after a human pick or edit). */
  executed: boolean;
}

export interface MatrixView {
  size: number;
  /** wins[row][col]: margin-weighted preference of candidate `row` over `col`; the diagonal is absent. */
  cells: Array<{ row: number; col: number; value: number }>;
  max: number;
}

export interface RewardRow {
  group: 'tests' | 'judge' | 'pprs' | 'total' | 'tampering';
  name: string;
  /** The row's value in [0,1] (a test: 1 passed, 0 otherwise). */
  value?: number;
  /** Tests: the test's weight; summary rows: the term's weight in the total. */
  weight?: number;
  /** Tests: the share of the test score this test carries (weight / sum of weights). */
  share?: number;
  detail: string;
}

export interface StepView {
  runId: string;
  step: number;
  steps: number;
  decision?: { mode: string; chosen: number; margin?: number; calls: number; outputTokens: number; fallback?: string; degradedFrom?: string };
  human?: string;
  candidates: CandidateView[];
  matrix?: MatrixView;
  reward: { rows: RewardRow[]; missing?: string };
  phi: { points: Array<{ step: number; phi: number }>; current?: number };
  /**
   * Set when the step is a turn waiting to run in a live session (nothing of it has run): the
   * inspector offers the decision. `chosen` is the candidate that runs if the human accepts.
   */
  pending?: { chosen: number };
}

export function buildStepView(runId: string, steps: readonly StepRecord[], footer: TrajectoryFooter | undefined, stepIndex: number): StepView {
  const i = Math.max(0, Math.min(stepIndex, steps.length - 1));
  const step = steps[i];
  const phi = { points: steps.filter((s) => typeof s.phi === 'number').map((s) => ({ step: s.index, phi: s.phi as number })), current: step?.index };
  const reward = rewardRows(footer?.reward, footer === undefined);
  if (!step) return { runId, step: 0, steps: 0, candidates: [], reward, phi };
  const d = step.decision;
  // The agent loop records any replaced turn as an edit; one whose text is a candidate's was a pick of that candidate.
  const pickedByHuman = step.human?.action === 'edit' ? step.candidates.findIndex((c) => c.text === step.chosenText) : -1;
  const human = pickedByHuman >= 0 ? { action: 'pick' as const, chosen: pickedByHuman } : step.human;
  const executed = human ? human.chosen : d?.chosen ?? step.candidates.findIndex((c) => c.text === step.chosenText);
  const order = d ? [...d.scores.keys()].sort((a, b) => d.scores[b] - d.scores[a]) : [];
  const candidates = step.candidates.map((c, k): CandidateView => ({
    index: k,
    text: c.text,
    score: d?.scores[k],
    rank: d && d.scores[k] !== undefined ? order.indexOf(k) + 1 : undefined,
    parses: c.parses,
    tokens: c.completionTokens,
    chosen: d ? d.chosen === k : false,
    executed: executed === k && human?.action !== 'edit',
  }));
  return {
    runId,
    step: step.index,
    steps: steps.length,
    decision: d && { mode: d.mode, chosen: d.chosen, margin: d.margin, calls: d.calls, outputTokens: d.outputTokens, fallback: d.fallback, degradedFrom: d.degradedFrom },
    human: human && (human.action === 'edit' ? `edited by a human (from candidate ${human.chosen})` : human.action === 'pick' ? `a human picked candidate ${human.chosen}` : 'a human accepted the verifier\'s pick'),
    candidates,
    matrix: d?.mode === 'pairwise' && d.matrix ? matrixView(d.matrix) : undefined,
    reward,
    phi,
  };
}

/**
 * The view of a turn waiting to run in a live session: its candidates and verifier decision come
 * from the debug session (the trajectory has no record of it yet), the reward and Φ from the
 * steps recorded so far. No candidate is marked executed: none has run.
 */
export function buildPendingStepView(runId: string, steps: readonly StepRecord[], footer: TrajectoryFooter | undefined, turn: PendingTurnInfo): StepView {
  const waiting: StepRecord = {
    type: 'step', index: turn.step, startedAt: '', durationMs: 0, candidates: turn.candidates, ...(turn.decision ? { decision: turn.decision } : {}),
    chosenText: turn.text, actions: [], parseErrors: [], usage: { promptTokens: 0, completionTokens: 0 }, todos: [], scratchpad: [],
  };
  const recorded = steps.filter((s) => s.index < turn.step);
  const v = buildStepView(runId, [...recorded, waiting], footer, recorded.length);
  return { ...v, candidates: v.candidates.map((c) => ({ ...c, chosen: c.index === turn.chosen, executed: false })), pending: { chosen: turn.chosen } };
}

function matrixView(m: number[][]): MatrixView {
  const cells: MatrixView['cells'] = [];
  m.forEach((row, r) => row.forEach((value, c) => { if (r !== c && Number.isFinite(value)) cells.push({ row: r, col: c, value }); }));
  return { size: m.length, cells, max: cells.reduce((a, c) => Math.max(a, Math.abs(c.value)), 0) };
}

function rewardRows(r: RewardRecord | undefined, unfinished: boolean): StepView['reward'] {
  if (!r) return { rows: [], missing: unfinished ? 'The run has not finished: the reward is computed at the end.' : 'This run has no reward (run without --skip-reward to score it).' };
  const rows: RewardRow[] = [];
  const outcomes = r.testOutcomes ?? [];
  const totalWeight = outcomes.reduce((a, t) => a + t.weight, 0);
  rows.push({ group: 'tests', name: 'tests', value: r.tests, weight: r.weights.tests, detail: r.testError ? `test run failed (${r.testError.kind}): ${r.testError.message}` : `${outcomes.filter((t) => t.status === 'passed' || t.status === 'xpass').length}/${outcomes.length} passed, weighted` });
  for (const t of outcomes) {
    const passed = t.status === 'passed' || t.status === 'xpass';
    rows.push({ group: 'tests', name: t.name, value: passed ? 1 : 0, weight: t.weight, share: totalWeight > 0 ? t.weight / totalWeight : undefined, detail: t.status });
  }
  const j = r.judge;
  if (j && 'missing' in j) rows.push({ group: 'judge', name: 'judge', weight: r.weights.judge, detail: `missing: ${j.missing}` });
  else if (j) {
    rows.push({ group: 'judge', name: 'judge', value: j.score, weight: r.weights.judge, detail: `${j.backend}, prompt ${j.promptVersion}` });
    for (const [name, value] of Object.entries(j.components)) rows.push({ group: 'judge', name, value, detail: 'judge component' });
  }
  if (r.pprs) rows.push({ group: 'pprs', name: 'Φ(s_T)', value: r.pprs.phi, weight: r.pprs.lambda, detail: `R = 1[pass=${r.pprs.pass}] + λ·Φ, λ = ${r.pprs.lambda}` });
  rows.push({ group: 'total', name: 'total', value: r.total, detail: r.pprs ? 'PPRS' : `${r.weights.tests}·tests + ${r.weights.judge}·judge` });
  // What the agent did to what scores it (syscall trace, pre-verification check): shown under the total.
  for (const f of r.tampering ?? []) rows.push({ group: 'tampering', name: f.kind, detail: `${f.step !== undefined ? `step ${f.step}: ` : ''}${f.detail}` });
  return { rows };
}
