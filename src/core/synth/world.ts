import { TbrlError } from '../errors';
import { Prng } from './prng';
import { DOMAIN_FAULT_CLASSES, FAULT_CLASSES, TIER_SCALE, type DomainSpec, type FactRow, type FaultClass, type ScaleTier, type World } from './types';

/** A fault declared against the latent world (record ids, not line numbers), drawn with W. */
export type FaultSpec =
  | { class: 'missing-records'; factIds: string[] }
  | { class: 'duplicated-records'; factIds: string[] }
  | { class: 'schema-drift'; partition: number; column: 'amount' | 'a' }
  | { class: 'unit-drift'; partition: number }
  | { class: 'category-drift'; variants: Array<{ id: string; text: string }> }
  | { class: 'shuffled-shard-index'; order: number[] }
  | { class: 'stale-cache'; droppedFactIds: string[]; bumpedFactIds: string[] };

export interface Draw {
  world: World;
  faults: FaultSpec[];
  /** Partition the grader drops to check that the agent's pipeline recomputes (no late records in it). */
  holdoutPartition: number;
}

/** Faults are applied in this order and reverted in the reverse one (faults.ts relies on it). */
export const FAULT_ORDER: readonly FaultClass[] = ['missing-records', 'duplicated-records', 'schema-drift', 'unit-drift', 'category-drift', 'shuffled-shard-index', 'stale-cache'];

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The fault classes a domain can draw: every generic class, then the ones its spec declares. */
export function domainFaultClasses(spec: DomainSpec): FaultClass[] {
  return [...FAULT_CLASSES, ...DOMAIN_FAULT_CLASSES.filter((c) => c === 'unit-drift' && spec.unitDrift !== undefined)];
}

/**
 * Draw W and its fault plan from one seed. `faultCount` N takes N generic classes, and the domain's
 * own classes once N exceeds the generic ones; by default a tier's generic count, plus the domain's
 * own classes at the small and full tiers. Domain classes come from their own PRNG fork, so a seed
 * draws the same generic faults as before they existed.
 */
export function drawWorld(spec: DomainSpec, tier: ScaleTier, seed: number, faultCount?: number): Draw {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new TbrlError('SYNTH_BAD_SEED', `seed must be an integer in [0, 4294967295], got ${seed}`, 'pass e.g. --seed 7.');
  }
  const scale = TIER_SCALE[tier];
  const rng = new Prng(seed);
  const worldRng = rng.fork(`world:${spec.name}:${tier}`);
  const dimA = Array.from({ length: scale.dimA }, (_, i) => ({
    id: `${spec.idPrefix.a}${pad(i + 1, 2)}`,
    name: `${worldRng.pick(spec.namePool)}-${i + 1}`,
    group: i < spec.groups.length ? spec.groups[i] : worldRng.pick(spec.groups),
  }));
  const dimB = Array.from({ length: scale.dimB }, (_, i) => ({
    id: `${spec.idPrefix.b}${pad(i + 1, 2)}`,
    category: i < spec.categories.length ? spec.categories[i] : worldRng.pick(spec.categories),
    unit: worldRng.int(spec.unitRange[0], spec.unitRange[1]),
  }));
  const files = new Set<string>();
  const partitions = Array.from({ length: scale.partitions }, (_, index) => {
    const format = worldRng.pick(spec.shardFormats);
    let file: string;
    do file = `part-${worldRng.hex(4)}.${spec.shardExt(format)}`;
    while (files.has(file));
    files.add(file);
    return { index, file, label: spec.partitionLabel(index), format };
  });
  const drafts: Array<Omit<FactRow, 'id'>> = [];
  for (const p of partitions) {
    const n = worldRng.int(scale.factsPerPartition[0], scale.factsPerPartition[1]);
    for (let k = 0; k < n; k++) drafts.push({ a: worldRng.pick(dimA).id, b: worldRng.pick(dimB).id, amount: worldRng.int(spec.amountRange[0], spec.amountRange[1]), partition: p.index });
  }
  // Ids are not in time order, so ordering by partition label is work the agent must do; within a
  // shard rows are stored by id.
  const numbers = worldRng.shuffle(drafts.map((_, i) => i + 1));
  const facts: FactRow[] = drafts
    .map((d, i) => ({ id: `${spec.idPrefix.fact}${pad(numbers[i], 4)}`, ...d }))
    .sort((x, y) => x.partition - y.partition || (x.id < y.id ? -1 : 1));
  const world: World = { domain: spec.name, tier, seed, dimA, dimB, facts, partitions };
  checkInvariants(world);
  const faultRng = rng.fork(`faults:${spec.name}:${tier}`);
  const holdoutPartition = faultRng.int(0, partitions.length - 1);
  const count = Math.min(faultCount ?? scale.faults, FAULT_CLASSES.length);
  const classes = new Set<FaultClass>(faultRng.sample(FAULT_CLASSES, count));
  const ownClasses = domainFaultClasses(spec).slice(FAULT_CLASSES.length);
  const ownCount = faultCount === undefined ? (tier === 'unit' ? 0 : ownClasses.length) : Math.max(0, faultCount - FAULT_CLASSES.length);
  const ownRng = rng.fork(`domain-faults:${spec.name}:${tier}`);
  for (const c of ownRng.sample(ownClasses, Math.min(ownCount, ownClasses.length))) classes.add(c);
  const faults: FaultSpec[] = [];
  for (const c of FAULT_ORDER.filter((x) => classes.has(x))) {
    faults.push(c === 'unit-drift' ? drawUnitDrift(world, faults, ownRng) : drawFault(c, world, holdoutPartition, faultRng));
  }
  return { world, faults, holdoutPartition };
}

/**
 * One shard in another unit. Never partition 0 (the verifier appends its counterfactual record
 * there, in canonical units) and never the schema-drifted shard (one dialect change per shard).
 */
function drawUnitDrift(world: World, drawn: FaultSpec[], rng: Prng): FaultSpec {
  const schema = drawn.find((f): f is Extract<FaultSpec, { class: 'schema-drift' }> => f.class === 'schema-drift');
  const pool = world.partitions.map((p) => p.index).filter((i) => i !== 0 && i !== schema?.partition);
  return { class: 'unit-drift', partition: rng.pick(pool) };
}

function drawFault(kind: Exclude<FaultClass, 'unit-drift'>, world: World, holdout: number, rng: Prng): FaultSpec {
  const few = Math.max(1, Math.round(world.facts.length * 0.08));
  // Missing and duplicated records never share ids, so each fault's revert sees its own lines.
  const outside = world.facts.filter((f) => f.partition !== holdout);
  const missingPool = outside.filter((_, i) => i % 2 === 0);
  const duplicatePool = world.facts.filter((f) => !missingPool.includes(f));
  switch (kind) {
    case 'missing-records':
      return { class: kind, factIds: rng.sample(missingPool, few).map((f) => f.id).sort() };
    case 'duplicated-records':
      return { class: kind, factIds: rng.sample(duplicatePool, few).map((f) => f.id).sort() };
    case 'schema-drift':
      return { class: kind, partition: rng.int(0, world.partitions.length - 1), column: rng.pick(['amount', 'a'] as const) };
    case 'category-drift': {
      const used = [...new Set(world.facts.map((f) => f.b))].sort();
      const ids = rng.sample(used, Math.max(1, Math.min(2, Math.floor(used.length / 2)))).sort();
      const styles = [(s: string) => s.toUpperCase(), (s: string) => s[0].toUpperCase() + s.slice(1), (s: string) => ` ${s} `];
      return { class: kind, variants: ids.map((id) => ({ id, text: rng.pick(styles)(world.dimB.find((b) => b.id === id)!.category) })) };
    }
    case 'shuffled-shard-index': {
      const identity = world.partitions.map((p) => p.index);
      let order = rng.shuffle(identity);
      // A shuffle that happens to be the identity would not be a fault.
      if (order.every((v, i) => v === i)) order = [...identity.slice(1), identity[0]];
      return { class: kind, order };
    }
    case 'stale-cache': {
      const dropped = rng.sample(world.facts, Math.max(1, Math.round(world.facts.length * 0.25))).map((f) => f.id).sort();
      const bumped = rng.sample(world.facts.filter((f) => !dropped.includes(f.id)), few).map((f) => f.id).sort();
      return { class: kind, droppedFactIds: dropped, bumpedFactIds: bumped };
    }
  }
}

/** W's invariants: unique ids, every join resolves, measures are finite positive integers. */
export function checkInvariants(world: World): void {
  const problems: string[] = [];
  const unique = (label: string, ids: string[]) => {
    const seen = new Set<string>();
    for (const id of ids) {
      if (seen.has(id)) problems.push(`${label} id ${id} is not unique`);
      seen.add(id);
    }
    return seen;
  };
  const a = unique('dimension A', world.dimA.map((r) => r.id));
  const b = unique('dimension B', world.dimB.map((r) => r.id));
  unique('fact', world.facts.map((r) => r.id));
  unique('partition file', world.partitions.map((p) => p.file));
  unique('partition label', world.partitions.map((p) => p.label));
  for (const f of world.facts) {
    if (!a.has(f.a)) problems.push(`fact ${f.id} joins to missing dimension A row ${f.a}`);
    if (!b.has(f.b)) problems.push(`fact ${f.id} joins to missing dimension B row ${f.b}`);
    if (!Number.isSafeInteger(f.amount) || f.amount <= 0) problems.push(`fact ${f.id} has a non-finite or non-positive measure ${f.amount}`);
    if (!world.partitions.some((p) => p.index === f.partition)) problems.push(`fact ${f.id} is in unknown partition ${f.partition}`);
  }
  for (const r of world.dimB) {
    if (!Number.isSafeInteger(r.unit) || r.unit <= 0) problems.push(`dimension B row ${r.id} has a non-finite unit ${r.unit}`);
    if (r.category !== r.category.trim().toLowerCase()) problems.push(`dimension B row ${r.id} has a non-canonical category "${r.category}"`);
  }
  for (const p of world.partitions) {
    if (!world.facts.some((f) => f.partition === p.index)) problems.push(`partition ${p.file} is empty`);
  }
  if (problems.length > 0) {
    throw new TbrlError('SYNTH_INVARIANT', `latent world violates its invariants: ${problems.slice(0, 5).join('; ')}`, 'this is a generator bug: report the domain, tier and seed.');
  }
}
