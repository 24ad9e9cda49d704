import { TbrlError } from '../errors';

/**
 * Progress contract: nodes V with weights (sum 1) and preconditions. Gated credit
 * c̃_v = min(c_v, c̃_p for every precondition p) — the min over v and all its ancestors — and the
 * potential Φ(s) = Σ w_v c̃_v(s). PPRS reward R = 1[pass] + λ·Φ(s_T).
 */
export interface ContractNode {
  id: string;
  weight: number;
  preconditions: string[];
  /** What the node's grader compares with W. */
  artifact: string;
  description: string;
  /** Workflow stages whose completion this node observes. */
  stages: string[];
  /**
   * What, besides the artifact itself, must hold for the node to earn credit: evidence that the
   * artifact was produced the asked way. A node without evidence could be earned by writing the
   * answer by hand, which is exactly what PPRS must not pay for.
   */
  evidence: EvidenceKind[];
}

/**
 * - `inputs-intact`: every input file under the data directory is byte-identical to the one shipped
 *   (SQLite tables compared row by row), and no file was added there.
 * - `reproduced-by-entry`: the entry point, run on a private copy of the inputs, writes this very
 *   artifact (no hand-written, copied, stale or partially overwritten outputs).
 * - `tracks-holdout`: the entry point, run on the inputs without one partition, writes an artifact
 *   that differs from the full one and holds none of the rows that only the dropped partition
 *   explains (no replay of saved answers, no pipeline that ignores its input directory).
 * - `recomputes-holdout`: the held-out run's report equals W's report without that partition.
 */
export type EvidenceKind = 'inputs-intact' | 'reproduced-by-entry' | 'tracks-holdout' | 'recomputes-holdout';

export interface ProgressContract { version: 1; lambda: number; nodes: ContractNode[] }

export const PPRS_LAMBDA = 0.25;

export function checkContract(contract: ProgressContract): void {
  const ids = new Set<string>();
  for (const n of contract.nodes) {
    if (ids.has(n.id)) throw new TbrlError('SYNTH_CONTRACT', `node ${n.id} appears twice`, 'give every contract node a unique id.');
    for (const p of n.preconditions) {
      if (!ids.has(p)) throw new TbrlError('SYNTH_CONTRACT', `node ${n.id} depends on ${p}, which is not an earlier node`, 'list nodes in dependency order; preconditions must name earlier nodes.');
    }
    if (!(n.weight > 0) || !Number.isFinite(n.weight)) throw new TbrlError('SYNTH_CONTRACT', `node ${n.id} has weight ${n.weight}`, 'weights are positive numbers summing to 1.');
    ids.add(n.id);
  }
  const sum = contract.nodes.reduce((s, n) => s + n.weight, 0);
  if (Math.abs(sum - 1) > 1e-9) throw new TbrlError('SYNTH_CONTRACT', `weights sum to ${sum}, not 1`, 'scale node weights so they add up to 1.');
}

export function gatedCredit(contract: ProgressContract, raw: Record<string, number>): Record<string, number> {
  const gated: Record<string, number> = {};
  for (const n of contract.nodes) {
    const own = raw[n.id];
    if (typeof own !== 'number' || !Number.isFinite(own) || own < 0 || own > 1) {
      throw new TbrlError('SYNTH_CREDIT', `credit of node ${n.id} is ${JSON.stringify(own)}, not a number in [0, 1]`, 'the grader must print a credit in [0, 1] for every node.');
    }
    gated[n.id] = Math.min(own, ...n.preconditions.map((p) => gated[p]));
  }
  return gated;
}

const round12 = (x: number) => Math.round(x * 1e12) / 1e12;

export function potential(contract: ProgressContract, raw: Record<string, number>): number {
  const gated = gatedCredit(contract, raw);
  return round12(contract.nodes.reduce((s, n) => s + n.weight * gated[n.id], 0));
}

export interface PprsReward { pass: boolean; phi: number; lambda: number; total: number }

export function pprsReward(pass: boolean, phi: number, lambda = PPRS_LAMBDA): PprsReward {
  if (!Number.isFinite(phi) || phi < 0 || phi > 1) throw new TbrlError('SYNTH_PPRS', `Φ must be in [0, 1], got ${phi}`, 'pass the potential the progress grader printed.');
  return { pass, phi, lambda, total: round12((pass ? 1 : 0) + lambda * phi) };
}
