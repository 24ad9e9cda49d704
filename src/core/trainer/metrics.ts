/**
 * Training metrics from a job's log: verl/rLLM console lines (`step:12 - actor/entropy:0.41 - ...`)
 * and the bridge's own JSONL records (`tbrl-metrics {"step": 0, "reward/mean": 0.5, ...}`), turned
 * into time series the editor charts. Lines arrive in arbitrary chunks, so the parser buffers.
 */
export interface Point {
  step: number;
  value: number;
}

export type Series = Record<string, Point[]>;

/** The charts' canonical names and the raw keys (verl, rLLM, bridge) that feed each, first match wins. */
export const CANONICAL: Record<string, readonly string[]> = {
  rewardMean: ['reward/mean', 'critic/score/mean', 'critic/rewards/mean', 'traj/reward/mean'],
  passRate: ['reward/pass_rate', 'val/pass_rate', 'critic/score/pass_rate', 'traj/solve_rate', 'batch/solve_all'],
  entropy: ['actor/entropy', 'actor/entropy_loss'],
  gradNorm: ['actor/grad_norm', 'grad_norm'],
  depgpoFactorSpread: ['depgpo/factor_spread'],
  tokensPerSec: ['perf/tokens_per_sec', 'perf/throughput'],
};

export const BRIDGE_METRICS_PREFIX = 'tbrl-metrics ';
const CONSOLE_RE = /(?:^|\s)step:(\d+)\s+-\s+(.*)$/;
const PAIR_RE = /([A-Za-z_][\w./@%-]*):\s*(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|-?inf)\b/g;

export class MetricsParser {
  readonly series: Series = {};
  /** Bridge records that are events rather than numbers (phase changes, errors, env episode). */
  readonly events: Array<Record<string, unknown>> = [];
  private rest = '';

  push(text: string): void {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  /** Call when the stream ends, for a last line without a newline. */
  end(): void {
    if (this.rest) this.line(this.rest);
    this.rest = '';
  }

  line(raw: string): void {
    const line = raw.replace(/\r$/, '');
    const at = line.indexOf(BRIDGE_METRICS_PREFIX);
    if (at >= 0) {
      this.bridgeRecord(line.slice(at + BRIDGE_METRICS_PREFIX.length));
      return;
    }
    const m = CONSOLE_RE.exec(line);
    if (!m) return;
    const step = Number(m[1]);
    for (const [, key, value] of m[2].matchAll(PAIR_RE)) this.add(key, step, parseNumber(value));
  }

  canonical(): Record<keyof typeof CANONICAL, Point[]> {
    const out = {} as Record<string, Point[]>;
    for (const [name, keys] of Object.entries(CANONICAL)) {
      const key = keys.find((k) => this.series[k]?.length);
      out[name] = key ? this.series[key] : [];
    }
    return out as Record<keyof typeof CANONICAL, Point[]>;
  }

  private bridgeRecord(json: string): void {
    let rec: unknown;
    try {
      rec = JSON.parse(json);
    } catch {
      return; // a line cut by the log tail; the next full log fetch repairs it
    }
    if (!rec || typeof rec !== 'object') return;
    const r = rec as Record<string, unknown>;
    const step = typeof r.step === 'number' ? r.step : undefined;
    let numeric = 0;
    if (step !== undefined) {
      for (const [k, v] of Object.entries(r)) {
        if (k === 'step' || typeof v !== 'number') continue;
        this.add(k, step, v);
        numeric++;
      }
    }
    if (typeof r.event === 'string' || numeric === 0) this.events.push(r);
  }

  private add(key: string, step: number, value: number): void {
    if (!Number.isFinite(step)) return;
    const points = (this.series[key] ??= []);
    // A reconnecting tail may replay a line; keep the latest value per step.
    const last = points[points.length - 1];
    if (last && last.step === step) last.value = value;
    else points.push({ step, value });
  }
}

export function parseMetrics(log: string): MetricsParser {
  const p = new MetricsParser();
  p.push(log);
  p.end();
  return p;
}

function parseNumber(s: string): number {
  if (s === 'nan') return NaN;
  if (s === 'inf') return Infinity;
  if (s === '-inf') return -Infinity;
  return Number(s);
}
