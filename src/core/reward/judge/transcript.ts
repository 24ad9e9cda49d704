import { TbrlError } from '../../errors';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader, TrajectoryLine } from '../../trajectory/schema';

/**
 * The trajectory as the judge reads it: the task, then each turn's text and what the environment
 * answered. Test results and rewards are left out on purpose: the judge rates how the agent worked.
 */
export interface TranscriptLimits {
  /** Per agent turn. */
  turnChars: number;
  /** Per action observation. */
  observationChars: number;
  /** Whole transcript; middle turns are elided beyond it (start and end matter most for phases). */
  totalChars: number;
}

export const DEFAULT_TRANSCRIPT_LIMITS: TranscriptLimits = { turnChars: 6000, observationChars: 2500, totalChars: 120_000 };

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 40) / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters cut ...]\n${text.slice(-half)}`;
}

export function splitTrajectory(lines: TrajectoryLine[]): { header: TrajectoryHeader; steps: StepRecord[]; footer?: TrajectoryFooter } {
  const header = lines.find((l): l is TrajectoryHeader => l.type === 'header');
  if (!header) {
    throw new TbrlError('judge.no-header', 'The trajectory given to the judge has no header line, so the task is unknown.', 'pass every line of trajectory.jsonl, starting with {"type":"header",...}');
  }
  const steps = lines.filter((l): l is StepRecord => l.type === 'step').sort((a, b) => a.index - b.index);
  const footer = lines.find((l): l is TrajectoryFooter => l.type === 'footer');
  return { header, steps, footer };
}

function renderStep(step: StepRecord, limits: TranscriptLimits): string {
  const out = [`## Turn ${step.index + 1}`, '[Agent]', clip(step.chosenText ?? '', limits.turnChars), '[Environment]'];
  if (step.actions.length === 0 && step.parseErrors.length === 0) out.push('(no environment response: the turn contained no action)');
  for (const a of step.actions) {
    const status = a.timedOut ? 'timed out' : a.exitCode !== undefined && a.exitCode !== null ? `exit ${a.exitCode}` : a.ok ? 'ok' : 'failed';
    out.push(`<${a.kind} result, ${status}>`, clip(a.observation ?? '', limits.observationChars));
  }
  for (const e of step.parseErrors) out.push('<parse error>', clip(e, limits.observationChars));
  return out.join('\n');
}

export function renderTranscript(lines: TrajectoryLine[], limits: TranscriptLimits = DEFAULT_TRANSCRIPT_LIMITS): string {
  const { header, steps, footer } = splitTrajectory(lines);
  const head = [
    '# Task given to the agent',
    header.task.instruction.trim(),
    '',
    `# Agent trajectory: ${steps.length} turn(s)${footer ? `, ended by ${footer.endReason}${footer.endMessage ? ` (${clip(footer.endMessage, 300)})` : ''}` : ', no end record (the run was cut off)'}`,
  ].join('\n');
  const rendered = steps.map((s) => renderStep(s, limits));
  let total = head.length + rendered.reduce((a, r) => a + r.length + 2, 0);
  if (total <= limits.totalChars) return [head, ...rendered].join('\n\n');

  // Keep the first and last turns and elide from the middle outwards.
  const keep = rendered.map(() => true);
  let lo = Math.floor(rendered.length / 2);
  let hi = lo;
  while (total > limits.totalChars && (lo > 0 || hi < rendered.length - 1)) {
    for (const i of [lo, hi]) {
      if (keep[i] && i > 0 && i < rendered.length - 1) {
        keep[i] = false;
        total -= rendered[i].length + 2;
      }
    }
    lo = Math.max(0, lo - 1);
    hi = Math.min(rendered.length - 1, hi + 1);
  }
  const parts = [head];
  let gap = 0;
  rendered.forEach((r, i) => {
    if (keep[i]) {
      if (gap) parts.push(`[... ${gap} turn(s) elided to fit the judge's context ...]`);
      gap = 0;
      parts.push(r);
    } else gap++;
  });
  return parts.join('\n\n');
}
