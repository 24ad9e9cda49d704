import type { FaultClass, ScaleTier } from './types';

/**
 * The workflow an agent has to carry out, compiled from the fault plan: each fault adds the repair
 * stage that undoes it. The horizon is the critical path (the longest dependency chain, in stages).
 */
export interface Stage {
  id: string;
  deps: string[];
  fault?: FaultClass;
  /** Estimated agent actions (tool calls) the stage takes at this task's size: 1 + one per 200 records it handles. */
  workload: number;
}

/** Sizes of the latent world the workload estimates scale with. */
export interface WorldSize { partitions: number; facts: number; dimA: number; dimB: number }

export interface Workflow {
  stages: Stage[];
  /** The longest chain by summed workload (ties: more stages, then names). */
  criticalPath: string[];
  /** Stages on the critical path. */
  horizon: number;
  /** Summed workload (estimated actions) along the critical path. */
  horizonWorkload: number;
  /** Most stages that can run side by side (stages at the same dependency depth). */
  width: number;
  depth: number;
  difficulty: 'easy' | 'medium' | 'hard';
  difficultyScore: number;
}

const REPAIR: Record<FaultClass, { id: string; after: string; before: string }> = {
  'schema-drift': { id: 'align-drifted-columns', after: 'parse-shards', before: 'dedupe-and-merge' },
  'unit-drift': { id: 'convert-drifted-units', after: 'parse-shards', before: 'dedupe-and-merge' },
  'missing-records': { id: 'merge-late-arrivals', after: 'parse-shards', before: 'dedupe-and-merge' },
  'duplicated-records': { id: 'drop-duplicate-records', after: 'parse-shards', before: 'write-clean' },
  'shuffled-shard-index': { id: 'order-partitions-by-label', after: 'read-index', before: 'write-clean' },
  'category-drift': { id: 'normalise-categories', after: 'load-dimension-b', before: 'join-dimensions' },
  'stale-cache': { id: 'bypass-stale-cache', after: 'locate-inputs', before: 'aggregate' },
  // The domains' second own classes (DomainSpec.ownFault).
  'timezone-skew': { id: 'convert-labels-to-utc', after: 'read-index', before: 'write-clean' },
  'compact-dates': { id: 'expand-compact-dates', after: 'read-index', before: 'write-clean' },
  'orphan-shard': { id: 'skip-unlisted-shards', after: 'read-index', before: 'parse-shards' },
  'replayed-records': { id: 'keep-first-delivery', after: 'parse-shards', before: 'write-clean' },
  'deprecated-key': { id: 'map-deprecated-keys', after: 'load-dimension-a', before: 'join-dimensions' },
  'negated-measure': { id: 'restore-measure-sign', after: 'parse-shards', before: 'dedupe-and-merge' },
  'qualified-ids': { id: 'strip-qualified-ids', after: 'parse-shards', before: 'dedupe-and-merge' },
};

/** Records a stage handles, by stage id (repair stages handle the fact table, or dimension B). */
function recordsOf(id: string, size: WorldSize): number {
  if (id === 'locate-inputs' || id === 'read-index' || id === 'order-partitions-by-label' || id === 'convert-labels-to-utc' || id === 'expand-compact-dates' || id === 'skip-unlisted-shards') return size.partitions;
  if (id === 'load-dimension-a' || id === 'map-deprecated-keys') return size.dimA;
  if (id === 'load-dimension-b' || id === 'normalise-categories') return size.dimB;
  if (id === 'write-summary' || id === 'package-pipeline' || id === 'bypass-stale-cache') return 1;
  if (id === 'write-report') return size.dimA * size.dimB;
  return size.facts;
}

const BASE: Array<Omit<Stage, 'workload'>> = [
  { id: 'locate-inputs', deps: [] },
  { id: 'read-index', deps: ['locate-inputs'] },
  { id: 'parse-shards', deps: ['read-index'] },
  { id: 'dedupe-and-merge', deps: ['parse-shards'] },
  { id: 'write-clean', deps: ['dedupe-and-merge'] },
  { id: 'load-dimension-a', deps: ['locate-inputs'] },
  { id: 'load-dimension-b', deps: ['locate-inputs'] },
  { id: 'join-dimensions', deps: ['write-clean', 'load-dimension-a', 'load-dimension-b'] },
  { id: 'write-enriched', deps: ['join-dimensions'] },
  { id: 'aggregate', deps: ['write-enriched'] },
  { id: 'write-report', deps: ['aggregate'] },
  { id: 'write-summary', deps: ['write-report'] },
  { id: 'package-pipeline', deps: ['write-summary'] },
];

const TIER_RANK: Record<ScaleTier, number> = { unit: 0, small: 1, full: 2 };

export function compileWorkflow(tier: ScaleTier, faults: FaultClass[], size: WorldSize = { partitions: 1, facts: 1, dimA: 1, dimB: 1 }): Workflow {
  const workload = (id: string) => 1 + Math.floor(recordsOf(id, size) / 200);
  const stages: Stage[] = BASE.map((s) => ({ ...s, deps: [...s.deps], workload: workload(s.id) }));
  const byId = new Map(stages.map((s) => [s.id, s]));
  for (const f of faults) {
    const r = REPAIR[f];
    stages.push({ id: r.id, deps: [r.after], fault: f, workload: workload(r.id) });
    byId.get(r.before)!.deps.push(r.id);
  }
  // Longest path by workload (then by stage count), memoised over the DAG.
  type Chain = { work: number; len: number; path: string[] };
  const better = (x: Chain, y: Chain) => x.work > y.work || (x.work === y.work && x.len > y.len);
  const longest = new Map<string, Chain>();
  const level = new Map<string, number>();
  const visit = (id: string): Chain => {
    const hit = longest.get(id);
    if (hit) return hit;
    const s = byId.get(id) ?? stages.find((x) => x.id === id)!;
    let best: Chain = { work: 0, len: 0, path: [] };
    let deepest = 0;
    for (const d of [...s.deps].sort()) {
      const r = visit(d);
      if (better(r, best)) best = r;
      deepest = Math.max(deepest, level.get(d)! + 1);
    }
    level.set(id, deepest);
    const out = { work: best.work + s.workload, len: best.len + 1, path: [...best.path, id] };
    longest.set(id, out);
    return out;
  };
  let critical: Chain = { work: 0, len: 0, path: [] };
  for (const s of stages) {
    const r = visit(s.id);
    if (better(r, critical)) critical = r;
  }
  const perLevel = new Map<number, number>();
  for (const l of level.values()) perLevel.set(l, (perLevel.get(l) ?? 0) + 1);
  const width = Math.max(...perLevel.values());
  const depth = Math.max(...level.values()) + 1;
  const difficultyScore = TIER_RANK[tier] * 2 + faults.length + Math.max(0, depth - 10);
  const difficulty = difficultyScore <= 3 ? 'easy' : difficultyScore <= 7 ? 'medium' : 'hard';
  return { stages, criticalPath: critical.path, horizon: critical.len, horizonWorkload: critical.work, width, depth, difficulty, difficultyScore };
}
