import { TbrlError } from '../errors';
import { Prng } from './prng';
import { FAULT_CLASSES, TIER_SCALE, type DomainSpec, type FactRow, type FaultClass, type OwnFaultClass, type ScaleTier, type TableFormat, type World } from './types';

/** A fault declared against the latent world (record ids, not line numbers), drawn with W. */
export type FaultSpec =
  | { class: 'missing-records'; factIds: string[] }
  | { class: 'duplicated-records'; factIds: string[] }
  | { class: 'schema-drift'; partition: number; column: 'amount' | 'a' }
  | { class: 'unit-drift'; partition: number }
  | { class: 'timezone-skew'; partition: number; offsetHours: number }
  | { class: 'compact-dates'; partition: number }
  | { class: 'orphan-shard'; file: string; format: TableFormat; records: Array<{ id: string; a: string; b: string; amount: number }> }
  | { class: 'replayed-records'; replays: Array<{ id: string; partition: number }> }
  | { class: 'deprecated-key'; ids: string[] }
  | { class: 'negated-measure'; partition: number }
  | { class: 'qualified-ids'; partition: number }
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
export const FAULT_ORDER: readonly FaultClass[] = ['missing-records', 'duplicated-records', 'replayed-records', 'schema-drift', 'unit-drift', 'negated-measure', 'qualified-ids', 'category-drift', 'deprecated-key', 'shuffled-shard-index', 'timezone-skew', 'compact-dates', 'orphan-shard', 'stale-cache'];

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The fault classes a domain can draw: every generic class, then the ones its spec declares. */
export function domainFaultClasses(spec: DomainSpec): FaultClass[] {
  return [...FAULT_CLASSES, ...(spec.unitDrift ? (['unit-drift'] as const) : []), ...(spec.ownFault ? [spec.ownFault.class] : [])];
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
  // Unit drift keeps the fork and the draw it had before the second own class existed.
  const ownRng = rng.fork(`domain-faults:${spec.name}:${tier}`);
  const unitClasses = ownClasses.filter((c) => c === 'unit-drift');
  for (const c of ownRng.sample(unitClasses, Math.min(ownCount, unitClasses.length))) classes.add(c);
  const secondRng = rng.fork(`domain-faults-2:${spec.name}:${tier}`);
  const second = ownClasses.find((c): c is OwnFaultClass => c !== 'unit-drift');
  if (second && ownCount > unitClasses.length) classes.add(second);
  const faults: FaultSpec[] = [];
  for (const c of FAULT_ORDER.filter((x) => classes.has(x))) {
    if (c === 'unit-drift') faults.push(drawUnitDrift(world, faults, ownRng));
    else if (isOwnClass(c)) faults.push(drawOwnFault(spec, c, world, faults, holdoutPartition, secondRng));
    else faults.push(drawFault(c, world, holdoutPartition, faultRng));
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

const isOwnClass = (c: FaultClass): c is OwnFaultClass => c !== 'unit-drift' && !(FAULT_CLASSES as readonly string[]).includes(c);

/**
 * The domain's second own fault. Shard-rewriting ones avoid partition 0 (the verifier appends its
 * counterfactual record there in the canonical dialect); re-sent records never come from the
 * grader's hold-out partition (dropping it must drop them) nor from missing or duplicated ids (each
 * revert sees its own lines).
 */
function drawOwnFault(spec: DomainSpec, kind: OwnFaultClass, world: World, drawn: FaultSpec[], holdout: number, rng: Prng): FaultSpec {
  const notFirst = world.partitions.map((p) => p.index).filter((i) => i !== 0);
  const few = Math.max(1, Math.round(world.facts.length * 0.05));
  switch (kind) {
    case 'timezone-skew': {
      const offset = rng.int(-8, 8);
      return { class: kind, partition: rng.int(0, world.partitions.length - 1), offsetHours: offset >= 0 ? offset + 1 : offset };
    }
    case 'compact-dates':
      return { class: kind, partition: rng.int(0, world.partitions.length - 1) };
    case 'negated-measure':
    case 'qualified-ids':
      return { class: kind, partition: rng.pick(notFirst) };
    case 'orphan-shard': {
      const format = rng.pick(spec.shardFormats);
      let file: string;
      do file = `part-${rng.hex(4)}.${spec.shardExt(format)}`;
      while (world.partitions.some((p) => p.file === file));
      const records = Array.from({ length: few + 1 }, (_, i) => ({ id: `${spec.idPrefix.fact}s${pad(i + 1, 3)}`, a: rng.pick(world.dimA).id, b: rng.pick(world.dimB).id, amount: rng.int(spec.amountRange[0], spec.amountRange[1]) }));
      return { class: kind, file, format, records };
    }
    case 'replayed-records': {
      const taken = new Set(drawn.flatMap((f) => (f.class === 'missing-records' || f.class === 'duplicated-records' ? f.factIds : [])));
      const last = world.partitions.length - 1;
      const pool = world.facts.filter((f) => f.partition !== holdout && f.partition < last && !taken.has(f.id));
      return { class: kind, replays: rng.sample(pool, few).map((f) => ({ id: f.id, partition: rng.int(f.partition + 1, last) })).sort((x, y) => (x.id < y.id ? -1 : 1)) };
    }
    case 'deprecated-key':
      return { class: kind, ids: rng.sample(world.dimA, Math.max(1, Math.ceil(world.dimA.length / 3))).map((r) => r.id).sort() };
  }
}

function drawFault(kind: (typeof FAULT_CLASSES)[number], world: World, holdout: number, rng: Prng): FaultSpec {
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
