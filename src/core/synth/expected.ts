import type { DomainSpec, FactRow, World } from './types';

/** The outputs a correct pipeline derives from W (and the wrong ones the probes use). */
export interface Outputs {
  clean: { header: string[]; rows: string[][] };
  enriched: { header: string[]; rows: string[][] };
  report: { header: string[]; rows: string[][] };
  summary: Summary;
}

export interface Summary { records: number; partitions: number; total: number; groups: number }

export interface OutputOptions {
  /** Category text per dimension-B id, when a probe forgets to normalise it. */
  categoryOf?: (id: string) => string;
  /** Order clean rows by this partition order instead of time order (a probe that trusts a shuffled index). */
  partitionOrder?: number[];
}

export function computeOutputs(spec: DomainSpec, world: World, facts: FactRow[] = world.facts, options: OutputOptions = {}): Outputs {
  const label = new Map(world.partitions.map((p) => [p.index, p.label]));
  const rank = new Map((options.partitionOrder ?? world.partitions.map((p) => p.index)).map((p, i) => [p, i]));
  const byTime = [...facts].sort((x, y) => {
    const dp = options.partitionOrder ? rank.get(x.partition)! - rank.get(y.partition)! : cmp(label.get(x.partition)!, label.get(y.partition)!);
    return dp !== 0 ? dp : cmp(x.id, y.id);
  });
  const a = new Map(world.dimA.map((r) => [r.id, r]));
  const b = new Map(world.dimB.map((r) => [r.id, r]));
  const category = (id: string) => (options.categoryOf ? options.categoryOf(id) : b.get(id)!.category);
  const clean = byTime.map((f) => [f.id, f.a, f.b, String(f.amount), label.get(f.partition)!]);
  const enriched = byTime.map((f) => [f.id, label.get(f.partition)!, a.get(f.a)!.group, category(f.b), String(f.amount * b.get(f.b)!.unit)]);
  const groups = new Map<string, { group: string; category: string; count: number; total: number }>();
  for (const f of byTime) {
    const g = a.get(f.a)!.group;
    const c = category(f.b);
    const key = `${g}\u0000${c}`;
    const entry = groups.get(key) ?? { group: g, category: c, count: 0, total: 0 };
    entry.count += 1;
    entry.total += f.amount * b.get(f.b)!.unit;
    groups.set(key, entry);
  }
  const report = [...groups.values()].sort((x, y) => cmp(x.group, y.group) || cmp(x.category, y.category)).map((e) => [e.group, e.category, String(e.count), String(e.total)]);
  const total = report.reduce((s, r) => s + Number(r[3]), 0);
  return {
    clean: { header: [spec.fact.id, spec.fact.a, spec.fact.b, spec.fact.amount, spec.fact.partition], rows: clean },
    enriched: { header: [spec.fact.id, spec.fact.partition, spec.dimA.group, spec.dimB.category, spec.out.value], rows: enriched },
    report: { header: [spec.dimA.group, spec.dimB.category, spec.out.count, spec.out.total], rows: report },
    summary: { records: facts.length, partitions: new Set(facts.map((f) => f.partition)).size, total, groups: report.length },
  };
}

export function csvText(table: { header: string[]; rows: string[][] }): string {
  return [table.header, ...table.rows].map((r) => r.join(',')).join('\n') + '\n';
}

export function summaryText(summary: Summary): string {
  return JSON.stringify(summary, null, 2) + '\n';
}

/** Output files of a pipeline run, keyed by path relative to the app root. */
export function outputFiles(spec: DomainSpec, outputs: Outputs): Record<string, string> {
  return {
    [spec.out.clean]: csvText(outputs.clean),
    [spec.out.enriched]: csvText(outputs.enriched),
    [spec.out.report]: csvText(outputs.report),
    [spec.out.summary]: summaryText(outputs.summary),
  };
}

export function cmp(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

export const basename = (p: string) => p.slice(p.lastIndexOf('/') + 1);
