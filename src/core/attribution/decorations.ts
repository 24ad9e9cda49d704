import type { FileAttribution } from './lines';

/** reached: the line counts towards E; unreached: written by the agent but never reached E; unknown: written, but the run has no E. */
export type DecorationKind = 'reached' | 'unreached' | 'unknown';

export interface LineDecoration {
  /** 0-based, as editors count. */
  line: number;
  kind: DecorationKind;
  step: number;
  /** Shown after the line, only on the first line of a block written by one step (every line would be noise). */
  afterText?: string;
  hover: string;
}

/**
 * Which line gets which decoration. Original lines (no writer) get none. Lines beyond the file's
 * actual length are dropped: the snapshot is authoritative for what is shown.
 */
export function decorationModel(attribution: FileAttribution, actualLineCount = attribution.lines.length): LineDecoration[] {
  const out: LineDecoration[] = [];
  let previousStep: number | undefined;
  for (const l of attribution.lines) {
    if (l.line > actualLineCount) break;
    if (l.step === undefined) {
      previousStep = undefined;
      continue;
    }
    const kind: DecorationKind = !attribution.eKnown ? 'unknown' : l.reachedE ? 'reached' : 'unreached';
    const reach = kind === 'unknown' ? 'E unknown (no verifier trace)' : l.reachedE ? `reached E (${l.via})` : 'did not reach E';
    out.push({
      line: l.line - 1,
      kind,
      step: l.step,
      ...(l.step !== previousStep ? { afterText: `step ${l.step}` } : {}),
      hover: `written by step ${l.step}: ${l.command ?? ''} — ${reach}`,
    });
    previousStep = l.step;
  }
  return out;
}
