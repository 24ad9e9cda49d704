import type { Point } from '../../src/core/trainer/metrics';

/** One chart of the dashboard: what the webview draws, already cleaned of values d3 cannot place. */
export interface ChartView {
  id: string;
  title: string;
  points: Point[];
  /** y extent of the drawn points; a flat series gets a unit band so the line is not on the axis. */
  yDomain: [number, number];
  xDomain: [number, number];
  last?: Point;
  /** Points dropped because the value was NaN or ±inf (a diverged step is worth showing as a count). */
  dropped: number;
}

/** The charts in the order shown, keyed by MetricsParser.canonical() names. */
export const CHARTS: ReadonlyArray<{ id: string; title: string }> = [
  { id: 'rewardMean', title: 'Reward (mean)' },
  { id: 'passRate', title: 'Pass rate' },
  { id: 'entropy', title: 'Entropy' },
  { id: 'gradNorm', title: 'Grad norm' },
  { id: 'depgpoFactorSpread', title: 'Step-factor spread (DepGPO)' },
];

export function chartViews(canonical: Record<string, Point[]>): ChartView[] {
  return CHARTS.map(({ id, title }) => {
    const raw = canonical[id] ?? [];
    // A reconnecting tail or a restarted trainer can repeat steps; the chart shows the latest per step, in step order.
    const byStep = new Map<number, number>();
    let dropped = 0;
    for (const p of raw) {
      if (Number.isFinite(p.value) && Number.isFinite(p.step)) byStep.set(p.step, p.value);
      else dropped++;
    }
    const points = [...byStep].map(([step, value]) => ({ step, value })).sort((a, b) => a.step - b.step);
    const ys = points.map((p) => p.value);
    let lo = ys.length ? Math.min(...ys) : 0;
    let hi = ys.length ? Math.max(...ys) : 1;
    if (lo === hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    const xs = points.map((p) => p.step);
    const x0 = xs.length ? xs[0] : 0;
    const x1 = xs.length ? xs[xs.length - 1] : 1;
    return { id, title, points, yDomain: [lo, hi], xDomain: [x0, x1 === x0 ? x0 + 1 : x1], last: points[points.length - 1], dropped };
  });
}
