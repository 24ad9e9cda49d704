import type { Trajectory } from './reader';
import type { ActionRecord, RewardRecord, StepRecord } from './schema';
import { isMasked, outcomeOf } from '../run/outcome';
import { describeTamperFlags } from '../reward/tampering';

/** Parse errors are recorded among the actions, in their place in the turn, under this kind. */
export const PARSE_ERROR = 'parse_error';

export interface ReplayOptions {
  /** Characters of each observation and turn shown (the rest is summarised). */
  maxChars?: number;
  /** Show every candidate, not only the chosen one. */
  candidates?: boolean;
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n… [${text.length - max} chars not shown] …\n${text.slice(text.length - tail)}`;
}

function indent(text: string, by = '    '): string {
  return text.split('\n').map((l) => by + l).join('\n');
}

/** One line per action: what it was and how it went. */
export function actionSummary(a: ActionRecord): string {
  const input = a.input ?? {};
  let what: string;
  if (a.kind === 'bash') what = firstLine(String(input.cmd ?? ''));
  else if (a.kind.startsWith('file.')) what = String(input.file_path ?? (Array.isArray(input.file_paths) ? input.file_paths.join(', ') : ''));
  else if (a.kind.startsWith('search.')) what = `${input.pattern ?? input.path ?? ''}`;
  else if (a.kind === 'finish') what = firstLine(String(input.message ?? ''));
  else what = '';
  const status = a.kind === 'bash' ? (a.timedOut ? 'timed out' : `exit ${a.exitCode ?? '-'}`) : a.ok ? 'ok' : 'failed';
  return `${a.kind}${what ? ` ${JSON.stringify(what.length > 100 ? what.slice(0, 97) + '...' : what)}` : ''} → ${status}, ${a.durationMs} ms`;
}

function firstLine(s: string): string {
  const line = s.split('\n')[0];
  return s.includes('\n') ? `${line} …` : line;
}

const BAR_WIDTH = 20;

function bar(value: number): string {
  const filled = Math.round(Math.max(0, Math.min(1, value)) * BAR_WIDTH);
  return '█'.repeat(filled) + '·'.repeat(BAR_WIDTH - filled);
}

/** Φ after each step that recorded it (Tev tasks), one bar per step; empty when no step has Φ. */
export function phiCurve(steps: StepRecord[]): string[] {
  const points = steps.filter((s) => typeof s.phi === 'number');
  if (!points.length) return [];
  return ['Φ curve (progress potential after each step):', ...points.map((s) => `  step ${String(s.index).padStart(3)}  ${bar(s.phi!)}  ${s.phi!.toFixed(3)}`)];
}

/** The pairwise verifier's preference matrix: row i over column j (margin-weighted wins). */
export function pairwiseMatrix(matrix: number[][], chosen?: number): string[] {
  const cell = (v: number | undefined, diagonal: boolean) => (diagonal ? '—' : v === undefined || !Number.isFinite(v) ? '' : v.toFixed(2)).padStart(6);
  const head = `      ${matrix.map((_, j) => `c${j}`.padStart(6)).join('')}`;
  return [
    'pairwise wins (row over column):',
    head,
    ...matrix.map((row, i) => `  ${`c${i}`.padEnd(4)}${matrix.map((_, j) => cell(row[j], i === j)).join('')}${i === chosen ? '   ← chosen' : ''}`),
  ];
}

/** How the total came about: weighted tests and judge, or PPRS's 1[pass] + λ·Φ(s_T). */
export function rewardBreakdown(r: RewardRecord): string[] {
  if (r.pprs) {
    const { pass, phi, lambda } = r.pprs;
    return [`PPRS: R = 1[pass] + λ·Φ(s_T) = ${pass ? 1 : 0} + ${lambda} × ${phi.toFixed(3)} = ${r.total.toFixed(3)}  (tests ${pass ? 'passed' : 'did not pass'})`];
  }
  const judge = r.judge && 'score' in r.judge ? r.judge.score : undefined;
  const parts = [`${r.weights.tests} × tests ${r.tests !== undefined ? r.tests.toFixed(3) : '(not scored: 0)'}`];
  if (r.weights.judge > 0 || judge !== undefined) parts.push(`${r.weights.judge} × judge ${judge !== undefined ? judge.toFixed(3) : '(missing: 0)'}`);
  const lines = [`Breakdown: ${parts.join(' + ')} = ${r.total.toFixed(3)}`];
  // A judge that was never asked has nothing to explain; one that failed says why its share is 0.
  if (r.judge && 'missing' in r.judge && !/^(no judge configured|judge weight is 0)$/.test(r.judge.missing)) lines.push(`  judge: ${r.judge.missing}`);
  return lines;
}

export function formatStep(s: StepRecord, options: ReplayOptions = {}): string {
  const max = options.maxChars ?? 1500;
  const out: string[] = [];
  const decision = s.decision ? `, ${s.decision.mode} verifier chose ${s.decision.chosen} of ${s.candidates.length}` : s.candidates.length > 1 ? `, ${s.candidates.length} candidates` : '';
  const tokens = s.usage.promptTokens || s.usage.completionTokens ? `, ${s.usage.promptTokens}+${s.usage.completionTokens} tokens` : '';
  out.push(`── step ${s.index} (${(s.durationMs / 1000).toFixed(1)} s${tokens}${decision})${s.human ? ` [human ${s.human.action}]` : ''}`);
  if (options.candidates && s.candidates.length > 1) {
    s.candidates.forEach((c, i) => out.push(`  candidate ${i}${c.parses ? '' : ' (does not parse)'}${s.decision ? ` score ${s.decision.scores[i]?.toFixed(2)}` : ''}:`, indent(clip(c.text, max))));
  }
  if (s.decision?.matrix?.length) out.push(...pairwiseMatrix(s.decision.matrix, s.decision.chosen).map((l) => `  ${l}`));
  out.push('  turn:', indent(clip(s.chosenText.trim() || '(empty)', max)));
  for (const a of s.actions) {
    out.push(a.kind === PARSE_ERROR ? '  ✗ parse error:' : `  ▸ ${actionSummary(a)}`);
    if (a.observation) out.push(indent(clip(a.observation, max)));
    // A lost or restarted tracer (and any other hole in the trace) is said where it happened.
    if (a.trace?.incomplete) out.push(`  ⚠ trace incomplete: ${a.trace.incomplete}`);
  }
  const shown = new Set(s.actions.map((a) => a.observation));
  for (const e of s.parseErrors) if (!shown.has(e)) out.push('  ✗ parse error:', indent(clip(e, max)));
  const open = s.todos.filter((t) => !t.done).length;
  if (s.todos.length) out.push(`  todos: ${s.todos.length - open} done, ${open} open`);
  return out.join('\n');
}

/**
 * Container output is the agent's: escape sequences in it (cursor moves, title changes, OSC 52
 * clipboard writes) must not reach the user's terminal. C0/C1 controls other than newline and tab
 * are shown as \xNN; the trajectory file keeps the raw bytes.
 */
export function sanitizeForTerminal(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The whole run as readable text: header, each step, footer (or why there is none). */
export function formatTrajectory(t: Trajectory, options: ReplayOptions = {}): string {
  const h = t.header;
  const out: string[] = [];
  out.push(`Run ${h.runId} — task ${h.task.id} (${h.task.format})`);
  out.push(`Policy: ${h.policy.kind}${h.policy.model ? ` ${h.policy.model}` : ''}${h.policy.n && h.policy.n > 1 ? ` n=${h.policy.n}` : ''}${h.verifier ? `, ${h.verifier.mode} verifier` : ''}; started ${h.startedAt}; schema ${h.schema}`);
  if (h.sandbox) out.push(`Image: ${h.sandbox.image}${h.sandbox.substitutedFrom ? ` (stand-in for ${h.sandbox.substitutedFrom})` : ''}; tracing ${h.sandbox.tracing.available ? 'on' : `off (${h.sandbox.tracing.reason ?? 'unavailable'})`}`);
  out.push('', 'Instruction:', indent(h.task.instruction.trim(), '  '), '');
  for (const s of t.steps) out.push(formatStep(s, options), '');
  const curve = phiCurve(t.steps);
  if (curve.length) out.push(...curve, '');
  const f = t.footer;
  if (f) {
    out.push(`Ended: ${f.endReason}${f.endMessage ? ` — ${f.endMessage}` : ''} after ${f.steps} step(s)`);
    if (f.reward) {
      const r = f.reward;
      out.push(`Reward: ${r.total.toFixed(3)}${r.tests !== undefined ? ` (tests ${r.tests.toFixed(3)})` : ''}${r.testError ? ` (tests not scored: ${r.testError.kind})` : ''}`);
      for (const o of r.testOutcomes ?? []) out.push(`  ${o.status === 'passed' ? '✓' : '✗'} ${o.name} (${o.status}, weight ${o.weight})`);
      for (const line of describeTamperFlags(r.tampering ?? [])) out.push(`  ⚠ reward tampering: ${line}`);
      out.push(...rewardBreakdown(r));
    } else {
      out.push('Reward: not computed');
    }
    const outcome = outcomeOf(f);
    out.push(`Outcome: ${outcome.class}${outcome.cause ? ` — ${outcome.cause}` : ''}${isMasked(outcome) ? ' (masked in credit and training)' : ''}`);
    if (f.depgpo) out.push(`DepGPO factors: ${f.depgpo.factors.map((x) => x.toFixed(2)).join(' ')}${f.depgpo.fallback ? ` (fallback: ${f.depgpo.fallback})` : ''}`);
    out.push(`Tokens: ${f.usage.promptTokens} prompt + ${f.usage.completionTokens} completion`);
  }
  for (const w of t.warnings) out.push(`warning: ${w}`);
  return out.join('\n');
}
