/**
 * From step scores to step factors and advantages (DESIGN.md, DepGPO):
 *
 *   "Per trajectory: m = min step score, f_t = (s_t − m) / mean_t(s_t − m) (min step gets 0,
 *    mean 1), Z = token-weighted mean of f, Â_t = (f_t / Z) · Â_i, where Â_i is the group
 *    relative advantage. All scores equal or no usable trace: every f_t = 1."
 *
 * Z makes the token-weighted mean of Â_t equal Â_i, so a token-level policy-gradient loss moves the
 * trajectory as a whole exactly as much as plain GRPO would; DepGPO only redistributes it across steps.
 */
export interface StepFactors {
  factors: number[];
  z: number;
  fallback?: string;
}

export function stepFactors(stepScores: readonly number[], stepTokens: readonly number[]): StepFactors {
  const T = stepScores.length;
  if (T === 0) return { factors: [], z: 1 };
  const ones = (fallback: string): StepFactors => ({ factors: new Array<number>(T).fill(1), z: 1, fallback });
  let m = Infinity;
  for (const s of stepScores) m = Math.min(m, s);
  let excessSum = 0;
  for (const s of stepScores) excessSum += s - m;
  const meanExcess = excessSum / T;
  if (!(meanExcess > 0)) return ones(`all step scores are equal (${formatScore(m)}): no step is singled out`);
  const factors = stepScores.map((s) => (s - m) / meanExcess);

  // Token weights: tokens the policy generated per step. Without any counts, every step weighs the same.
  let weightSum = 0;
  let weighted = 0;
  for (let t = 0; t < T; t++) {
    const n = tokenWeight(stepTokens[t]);
    weightSum += n;
    weighted += n * factors[t];
  }
  const z = weightSum > 0 ? weighted / weightSum : factors.reduce((a, b) => a + b, 0) / T;
  if (!(z > 0)) return ones('every generated token is in a step with factor 0, so Z = 0 and f/Z is undefined');
  return { factors, z };
}

/** Â_t = (f_t / Z) · Â_i. */
export function stepAdvantages(factors: readonly number[], z: number, groupAdvantage: number): number[] {
  return factors.map((f) => (f / z) * groupAdvantage);
}

export interface GroupOptions {
  /** GRPO divides by the group's standard deviation; false gives R_i − mean (Dr. GRPO style). */
  normalizeStd?: boolean;
}

/**
 * Group-relative advantage Â_i = (R_i − mean) / std over the group (GRPO). std is the sample
 * standard deviation (n − 1, as torch.std in verl's GRPO estimator). Unlike verl we add no ε: a
 * group whose rewards are all equal carries no relative signal and gets 0, and a group of one
 * rollout gets 0 too (verl would pass its raw reward through, which is not a relative advantage).
 */
export function groupAdvantages(rewards: readonly number[], options: GroupOptions = {}): number[] {
  const n = rewards.length;
  if (n < 2) return rewards.map(() => 0);
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  if (options.normalizeStd === false) return rewards.map((r) => r - mean);
  const variance = rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1);
  const std = Math.sqrt(variance);
  return rewards.map((r) => (std > 0 ? (r - mean) / std : 0));
}

function tokenWeight(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;
}

function formatScore(s: number): string {
  return Number.isFinite(s) ? String(Math.round(s * 1e6) / 1e6) : String(s);
}
