import { decisionOnly } from './decision-only';
import { listwise } from './listwise';
import { pairwise } from './pairwise';
import { pointwise } from './pointwise';
import type { VerifierModeDefinition } from './mode';

/**
 * Every per-step verifier mode, in the order help and settings list them. To add a mode: a file
 * in this folder exporting its `VerifierModeDefinition`, a prompt file, and one line here (then
 * the three `verifier` enums in package.json, which a unit test checks against this list).
 */
export const VERIFIER_MODE_DEFINITIONS = [
  listwise,
  pointwise,
  pairwise,
  decisionOnly,
] as const;

export type VerifierMode = (typeof VERIFIER_MODE_DEFINITIONS)[number]['id'];
export const VERIFIER_MODES: readonly VerifierMode[] = VERIFIER_MODE_DEFINITIONS.map((m) => m.id);

const BY_ID = new Map<string, VerifierModeDefinition<VerifierMode>>(VERIFIER_MODE_DEFINITIONS.map((m) => [m.id, m]));

export function verifierMode(id: VerifierMode): VerifierModeDefinition<VerifierMode> {
  const def = BY_ID.get(id);
  if (!def) throw new Error(`no verifier mode "${id}" is registered`);
  return def;
}

/** The registered mode a spelling names (an id or an alias, any case), if any. */
export function findVerifierMode(spelling: string): VerifierMode | undefined {
  const s = spelling.trim().toLowerCase();
  return VERIFIER_MODE_DEFINITIONS.find((m) => m.id === s || (m.aliases ?? []).includes(s))?.id;
}

/** The modes a token budget may step down to from `mode`, costliest first. */
export function cheaperModes(mode: VerifierMode): VerifierMode[] {
  const rank = verifierMode(mode).costRank;
  return VERIFIER_MODE_DEFINITIONS.filter((m) => m.stepDownTarget && m.costRank < rank)
    .sort((a, b) => b.costRank - a.costRank)
    .map((m) => m.id);
}

export type { VerifierModeDefinition, VerifierCall, PlanInput, InterpretInput, Verdict } from './mode';
