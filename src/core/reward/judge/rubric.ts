import { parse as parseYaml } from 'yaml';

/**
 * The judge rubric (modelled on Terminal-Bench-RL's): the model reports component scores, caps and
 * penalties; the total is computed here, because models are unreliable at arithmetic and a
 * deterministic formula makes scores comparable across judge models.
 */
export const COMPONENT_WEIGHTS = {
  action_output_success: 0.35,
  todo_planning: 0.25,
  phase_adherence: 0.25,
  tool_use: 0.15,
} as const;

export const CAPS = {
  no_valid_action: 0.09,
  only_parse_errors: 0.3,
  no_initial_todos: 0.4,
  skipped_exploration: 0.5,
} as const;

export const PENALTY_MAX = {
  overthinking: 0.4,
  gaming: 0.5,
  phase_violations: 0.3,
} as const;

export type ComponentName = keyof typeof COMPONENT_WEIGHTS;
export type CapName = keyof typeof CAPS;
export type PenaltyName = keyof typeof PENALTY_MAX;

export interface JudgeVerdict {
  components: Record<ComponentName, number>;
  caps: CapName[];
  penalties: Record<PenaltyName, number>;
  rationale?: string;
}

export type ParsedAnswer = { ok: true; verdict: JudgeVerdict } | { ok: false; problems: string[] };

const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

export function computeJudgeScore(v: JudgeVerdict): number {
  const base = (Object.keys(COMPONENT_WEIGHTS) as ComponentName[]).reduce((a, k) => a + COMPONENT_WEIGHTS[k] * v.components[k], 0);
  const penalty = (Object.keys(PENALTY_MAX) as PenaltyName[]).reduce((a, k) => a + v.penalties[k], 0);
  const cap = Math.min(1, ...v.caps.map((c) => CAPS[c]));
  return round4(Math.min(cap, Math.max(0, base - penalty)));
}

/** Flat record for RewardRecord.judge.components: the four components, then `penalty.*` and `cap.*`. */
export function verdictComponents(v: JudgeVerdict): Record<string, number> {
  const out: Record<string, number> = { ...v.components };
  for (const [k, p] of Object.entries(v.penalties)) out[`penalty.${k}`] = p;
  for (const c of v.caps) out[`cap.${c}`] = CAPS[c];
  return out;
}

/** The last fenced block, else the outermost {...}, else the whole text. */
function answerBody(text: string): string {
  const fences = [...text.matchAll(/```[a-zA-Z]*\s*\n([\s\S]*?)```/g)];
  if (fences.length > 0) return fences[fences.length - 1][1];
  const first = text.indexOf('{');
  const last = text.lastIndexOf('}');
  if (first >= 0 && last > first) return text.slice(first, last + 1);
  return text;
}

function number(value: unknown, where: string, max: number, problems: string[]): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    problems.push(`${where} must be a number between 0 and ${max}, got ${JSON.stringify(value) ?? 'nothing'}`);
    return 0;
  }
  if (n < 0 || n > max + 1e-9) problems.push(`${where} must be between 0 and ${max}, got ${n}`);
  return Math.min(max, Math.max(0, n));
}

export function parseJudgeAnswer(text: string): ParsedAnswer {
  // Reasoning models may wrap their thoughts in <think>; a JSON example inside them is not the answer.
  const cleaned = text.replace(/<think>[\s\S]*?<\/think>/g, '').trim();
  if (!cleaned) return { ok: false, problems: ['the answer was empty'] };
  let data: unknown;
  try {
    data = parseYaml(answerBody(cleaned));
  } catch (err) {
    return { ok: false, problems: [`the answer is not valid JSON: ${(err as Error).message.split('\n')[0]}`] };
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { ok: false, problems: ['the answer must be one JSON object with "components", "caps" and "penalties"'] };
  const obj = data as Record<string, unknown>;
  const problems: string[] = [];

  const comps = obj.components;
  const components = {} as Record<ComponentName, number>;
  if (!comps || typeof comps !== 'object' || Array.isArray(comps)) {
    problems.push(`"components" must be an object with ${Object.keys(COMPONENT_WEIGHTS).join(', ')}`);
  } else {
    for (const k of Object.keys(COMPONENT_WEIGHTS) as ComponentName[]) components[k] = number((comps as Record<string, unknown>)[k], `components.${k}`, 1, problems);
    const unknown = Object.keys(comps).filter((k) => !(k in COMPONENT_WEIGHTS));
    if (unknown.length) problems.push(`unknown component(s) ${unknown.join(', ')}; use exactly ${Object.keys(COMPONENT_WEIGHTS).join(', ')}`);
  }

  const capsRaw = obj.caps ?? [];
  const caps: CapName[] = [];
  if (!Array.isArray(capsRaw)) problems.push('"caps" must be a list of cap names (or [])');
  else {
    for (const c of capsRaw) {
      if (typeof c === 'string' && c in CAPS) caps.push(c as CapName);
      else problems.push(`unknown cap ${JSON.stringify(c)}; caps are ${Object.keys(CAPS).join(', ')}`);
    }
  }

  const penRaw = obj.penalties ?? {};
  const penalties = { overthinking: 0, gaming: 0, phase_violations: 0 } as Record<PenaltyName, number>;
  if (!penRaw || typeof penRaw !== 'object' || Array.isArray(penRaw)) problems.push('"penalties" must be an object');
  else {
    for (const [k, v] of Object.entries(penRaw as Record<string, unknown>)) {
      if (!(k in PENALTY_MAX)) problems.push(`unknown penalty ${k}; penalties are ${Object.keys(PENALTY_MAX).join(', ')}`);
      else penalties[k as PenaltyName] = number(v, `penalties.${k}`, PENALTY_MAX[k as PenaltyName], problems);
    }
  }

  if (problems.length > 0) return { ok: false, problems };
  const rationale = typeof obj.rationale === 'string' ? obj.rationale.slice(0, 2000) : undefined;
  return { ok: true, verdict: { components, caps: [...new Set(caps)], penalties, rationale } };
}

export function formatCorrection(problems: string[]): string {
  return [
    'Your answer could not be used:',
    ...problems.map((p) => `- ${p}`),
    '',
    'Answer again with only one JSON object in a ```json block, exactly in this shape:',
    '```json',
    '{"components": {"action_output_success": 0.8, "todo_planning": 0.6, "phase_adherence": 0.7, "tool_use": 0.9},',
    ' "caps": [], "penalties": {"overthinking": 0.0, "gaming": 0.0, "phase_violations": 0.0},',
    ' "rationale": "..."}',
    '```',
  ].join('\n');
}
