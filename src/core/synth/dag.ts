import type { FaultClass, ScaleTier } from './types';

/**
 * The workflow an agent has to carry out, compiled from the fault plan: each fault adds the repair
 * stage that undoes it. The horizon is the critical path (the longest dependency chain, in stages).
 */
export interface Stage { id: string; deps: string[]; fault?: FaultClass }

export interface Workflow {
  stages: Stage[];
  criticalPath: string[];
  horizon: number;
  depth: number;
  difficulty: 'easy' | 'medium' | 'hard';
  difficultyScore: number;
}

const REPAIR: Record<FaultClass, { id: string; after: string; before: string }> = {
  'schema-drift': { id: 'align-drifted-columns', after: 'parse-shards', before: 'dedupe-and-merge' },
  'missing-records': { id: 'merge-late-arrivals', after: 'parse-shards', before: 'dedupe-and-merge' },
  'duplicated-records': { id: 'drop-duplicate-records', after: 'parse-shards', before: 'write-clean' },
  'shuffled-shard-index': { id: 'order-partitions-by-label', after: 'read-index', before: 'write-clean' },
  'category-drift': { id: 'normalise-categories', after: 'load-dimension-b', before: 'join-dimensions' },
  'stale-cache': { id: 'bypass-stale-cache', after: 'locate-inputs', before: 'aggregate' },
};

const BASE: Stage[] = [
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

export function compileWorkflow(tier: ScaleTier, faults: FaultClass[]): Workflow {
  const stages = BASE.map((s) => ({ ...s, deps: [...s.deps] }));
  const byId = new Map(stages.map((s) => [s.id, s]));
  for (const f of faults) {
    const r = REPAIR[f];
    stages.push({ id: r.id, deps: [r.after], fault: f });
    byId.get(r.before)!.deps.push(r.id);
  }
  // Topological order (BASE is listed in one; repairs slot in by depth) and longest path.
  const longest = new Map<string, { len: number; path: string[] }>();
  const visit = (id: string): { len: number; path: string[] } => {
    const hit = longest.get(id);
    if (hit) return hit;
    const s = stages.find((x) => x.id === id)!;
    let best = { len: 0, path: [] as string[] };
    for (const d of [...s.deps].sort()) {
      const r = visit(d);
      if (r.len > best.len) best = r;
    }
    const out = { len: best.len + 1, path: [...best.path, id] };
    longest.set(id, out);
    return out;
  };
  let critical = { len: 0, path: [] as string[] };
  for (const s of stages) {
    const r = visit(s.id);
    if (r.len > critical.len) critical = r;
  }
  const depth = critical.len;
  const difficultyScore = TIER_RANK[tier] * 2 + faults.length + Math.max(0, depth - 10);
  const difficulty = difficultyScore <= 3 ? 'easy' : difficultyScore <= 7 ? 'medium' : 'hard';
  return { stages, criticalPath: critical.path, horizon: critical.len, depth, difficulty, difficultyScore };
}
