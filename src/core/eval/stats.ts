import { Prng } from '../synth/prng';

/**
 * Estimators for eval jobs. pass@k is the unbiased estimator of Chen et al. (2021): with n trials of
 * which c passed, pass@k = 1 − C(n−c, k) / C(n, k), computed as a product so large n never overflows.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 0 || c < 0 || c > n || k < 1) {
    throw new RangeError(`pass@k needs whole numbers 0 ≤ c ≤ n and k ≥ 1 (got n=${n}, c=${c}, k=${k})`);
  }
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} trials, got ${n}`);
  if (n - c < k) return 1;
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

export interface BootstrapInterval {
  /** Mean over tasks of (b − a). */
  mean: number;
  low: number;
  high: number;
  level: number;
  resamples: number;
  seed: number;
}

/**
 * Paired percentile bootstrap over tasks for the difference of two jobs' mean per-task pass rates:
 * tasks are resampled with replacement and the same resample applies to both jobs.
 */
export function pairedBootstrap(a: number[], b: number[], options: { resamples?: number; level?: number; seed?: number } = {}): BootstrapInterval {
  if (a.length !== b.length) throw new RangeError(`paired bootstrap needs the same tasks in both jobs (${a.length} vs ${b.length})`);
  const resamples = options.resamples ?? 2000;
  const level = options.level ?? 0.95;
  const seed = options.seed ?? 0;
  const d = a.map((x, i) => b[i] - x);
  const n = d.length;
  const mean = n ? d.reduce((s, x) => s + x, 0) / n : 0;
  if (n === 0) return { mean: 0, low: 0, high: 0, level, resamples, seed };
  // The studio's one seeded generator: the same seed gives the same interval on every machine.
  const prng = new Prng(seed);
  const rand = (): number => prng.next();
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[Math.floor(rand() * n)];
    means[r] = s / n;
  }
  means.sort();
  const tail = (1 - level) / 2;
  const at = (q: number): number => means[Math.min(resamples - 1, Math.max(0, Math.floor(q * resamples)))];
  return { mean, low: at(tail), high: at(1 - tail), level, resamples, seed };
}
