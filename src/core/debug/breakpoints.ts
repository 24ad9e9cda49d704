import type { StepRecord } from '../trajectory/schema';

/**
 * Function breakpoints of the `tbrl` debugger. A breakpoint is a short spec typed into the
 * Breakpoints view (or listed under `breakOn` in launch.json):
 *   bash, file.edit, file.*      action kind (glob `*`)
 *   /pytest -x/i  or  cmd:/re/   regex over the commands and the turn text
 *   margin<0.2                   the verifier's margin below a threshold
 *   error                        an action failed, exited non-zero, or the turn did not parse
 *   phi-drop                     the progress potential Φ fell against the previous step
 */
export type BreakpointSpec =
  | { type: 'kind'; pattern: RegExp; text: string }
  | { type: 'regex'; pattern: RegExp; text: string }
  | { type: 'margin'; below: number; text: string }
  | { type: 'error'; text: string }
  | { type: 'phi-drop'; text: string };

/** What a breakpoint looks at: a recorded step, or a turn that has not run yet (live runs). */
export interface StepFacts {
  kinds: string[];
  commands: string[];
  text: string;
  margin?: number;
  /** Undefined before the step ran. */
  error?: boolean;
  phi?: number;
  prevPhi?: number;
}

export const BREAKPOINT_HELP = 'Use an action kind (bash, file.edit, file.*), a regex (/pytest/ or cmd:/rm -rf/), margin<0.2, error, or phi-drop.';

export function parseBreakpoint(raw: string): BreakpointSpec | { error: string } {
  const text = raw.trim();
  if (text === '') return { error: `Empty breakpoint. ${BREAKPOINT_HELP}` };
  const re = /^(?:cmd:)?\/(.+)\/([a-z]*)$/.exec(text);
  if (re) {
    try {
      return { type: 'regex', pattern: new RegExp(re[1], re[2]), text };
    } catch (err) {
      return { error: `Invalid regex in breakpoint "${text}": ${(err as Error).message}. Example: /pytest -x/i` };
    }
  }
  const margin = /^margin\s*<\s*([0-9.]+)$/.exec(text);
  if (margin) {
    const below = Number(margin[1]);
    if (!Number.isFinite(below)) return { error: `"${text}": the threshold is not a number. Example: margin<0.2` };
    return { type: 'margin', below, text };
  }
  if (text === 'error') return { type: 'error', text };
  if (text === 'phi-drop' || text === 'phi drop') return { type: 'phi-drop', text };
  if (/^[a-z_]+(\.[a-z_*]+)?$|^[a-z_]+\.\*$|^\*$/.test(text)) {
    const pattern = new RegExp(`^${text.replace(/\./g, '\\.').replace(/\*/g, '[^.]*')}$`);
    return { type: 'kind', pattern, text };
  }
  return { error: `Unrecognised breakpoint "${text}". ${BREAKPOINT_HELP}` };
}

export function matches(spec: BreakpointSpec, facts: StepFacts): boolean {
  switch (spec.type) {
    case 'kind':
      return facts.kinds.some((k) => spec.pattern.test(k));
    case 'regex':
      spec.pattern.lastIndex = 0;
      return facts.commands.some((c) => { spec.pattern.lastIndex = 0; return spec.pattern.test(c); }) || spec.pattern.test(facts.text);
    case 'margin':
      return facts.margin !== undefined && facts.margin < spec.below;
    case 'error':
      return facts.error === true;
    case 'phi-drop':
      return facts.phi !== undefined && facts.prevPhi !== undefined && facts.phi < facts.prevPhi;
  }
}

/** The first breakpoint that `facts` hits, for the stop reason shown to the user. */
export function firstHit(specs: readonly BreakpointSpec[], facts: StepFacts): BreakpointSpec | undefined {
  return specs.find((s) => matches(s, facts));
}

export function factsOfStep(step: StepRecord, prev?: StepRecord): StepFacts {
  const actions = step.actions ?? [];
  return {
    kinds: actions.map((a) => a.kind),
    commands: actions.map((a) => (typeof a.input?.cmd === 'string' ? a.input.cmd : '')).filter(Boolean),
    text: step.chosenText ?? '',
    margin: step.decision?.margin,
    error: (step.parseErrors?.length ?? 0) > 0 || actions.some((a) => !a.ok || a.timedOut || (a.exitCode !== undefined && a.exitCode !== null && a.exitCode !== 0)),
    phi: step.phi,
    prevPhi: prev?.phi,
  };
}
