/**
 * Tev synthesis types. Every domain is a star-shaped latent world: a sharded fact table, two
 * dimension tables it joins to, and a report over the join. Domains differ in names, file formats
 * and value ranges; the pipeline (world -> DAG -> render -> faults -> contract -> gates) is shared.
 */
export type ScaleTier = 'unit' | 'small' | 'full';
export const SCALE_TIERS: readonly ScaleTier[] = ['unit', 'small', 'full'];

/** Formats a table can be rendered in; each has a writer and a parser (render.ts). */
export type TableFormat = 'csv' | 'tsv' | 'jsonl' | 'kv' | 'json-array' | 'sql' | 'manifest' | 'safetensors' | 'elf';

export const PAPER_DOMAINS = ['software engineering', 'data engineering', 'AI/CS research', 'math & operations research', 'security & forensics', 'infrastructure management', 'quantum computing'] as const;
export type PaperDomain = (typeof PAPER_DOMAINS)[number];

/** Fault classes every domain has; a task's plan samples from these first (the draw of a seed depends on this list). */
export const FAULT_CLASSES = ['schema-drift', 'duplicated-records', 'missing-records', 'category-drift', 'shuffled-shard-index', 'stale-cache'] as const;
/**
 * Fault classes a domain has only when its spec declares them: unit drift (DomainSpec.unitDrift),
 * then at most one more of the domain's own (DomainSpec.ownFault), each with its own PRNG fork.
 */
export const OWN_FAULT_CLASSES = ['timezone-skew', 'compact-dates', 'orphan-shard', 'replayed-records', 'deprecated-key', 'negated-measure', 'qualified-ids'] as const;
export type OwnFaultClass = (typeof OWN_FAULT_CLASSES)[number];
export const DOMAIN_FAULT_CLASSES = ['unit-drift', ...OWN_FAULT_CLASSES] as const;
export type FaultClass = (typeof FAULT_CLASSES)[number] | (typeof DOMAIN_FAULT_CLASSES)[number];

export interface DimARow { id: string; name: string; group: string }
export interface DimBRow { id: string; category: string; unit: number }
export interface FactRow { id: string; a: string; b: string; amount: number; partition: number }
export interface Partition { index: number; file: string; label: string; format: TableFormat }

export interface World {
  domain: string;
  tier: ScaleTier;
  seed: number;
  dimA: DimARow[];
  dimB: DimBRow[];
  facts: FactRow[];
  partitions: Partition[];
}

/** Column names of one table as the files (and the instruction) spell them. */
export interface DomainSpec {
  name: string;
  title: string;
  /** The Tev paper's domain this generator covers (one of PAPER_DOMAINS). */
  field: PaperDomain;
  /** A finer label for the coverage table, e.g. "sales ETL". */
  subDomain: string;
  /** Task category written to task.yaml / task.toml. */
  category: string;
  /** Tool capabilities the workflow exercises (coverage axis). */
  tools: readonly string[];
  /** What each fault class means in this domain's words (coverage and the README). */
  faultStory: Partial<Record<FaultClass, string>>;
  /** Plural noun of the fact table, e.g. "orders". */
  factNoun: string;
  fact: { id: string; a: string; b: string; amount: string; partition: string };
  /** Old spellings a drifted shard may use (schema drift picks one). */
  aliases: { amount: string; a: string };
  /**
   * The domain's own unit-drift fault: one shard reports the measure under `key` in another unit,
   * with `amount = value × scale` exactly (scale a power of ten, or its inverse: "1000" for a
   * coarser unit written with three decimals, "0.001" for a finer integer unit).
   */
  unitDrift?: { key: string; scale: '1000' | '100' | '10' | '0.1' | '0.01' | '0.001'; meaning: string };
  /**
   * The domain's second fault class of its own (faults.ts applies it, the instruction states
   * `rule`): one index label in a local UTC offset or a compact date, a stale shard not listed in
   * the index, records re-sent in a later shard, a deprecated dimension-A key, a negated measure,
   * or fact keys qualified with their dimension-A group. `key` is the deprecated spelling of the
   * dimension-A group (deprecated-key only).
   */
  ownFault?: { class: OwnFaultClass; rule: string; key?: string };
  dimA: { file: string; format: 'json-array' | 'csv' | 'manifest'; id: string; name: string; group: string; noun: string };
  dimB: { file: string; format: 'sql' | 'tsv' | 'safetensors' | 'elf'; table: string; id: string; category: string; unit: string; noun: string };
  shardDir: string;
  shardFormats: readonly TableFormat[];
  shardExt: (f: TableFormat) => string;
  /** The label of partition i (an ISO day or hour, so string order is time order). */
  partitionLabel: (i: number) => string;
  idPrefix: { fact: string; a: string; b: string };
  groups: readonly string[];
  categories: readonly string[];
  namePool: readonly string[];
  amountRange: [number, number];
  unitRange: [number, number];
  out: { clean: string; enriched: string; report: string; summary: string; value: string; count: string; total: string };
  /** One sentence on what the report means, for the instruction. */
  story: string;
}

export interface TierScale { partitions: number; factsPerPartition: [number, number]; dimA: number; dimB: number; faults: number }

export const TIER_SCALE: Record<ScaleTier, TierScale> = {
  unit: { partitions: 3, factsPerPartition: [4, 6], dimA: 4, dimB: 4, faults: 2 },
  small: { partitions: 5, factsPerPartition: [10, 16], dimA: 8, dimB: 6, faults: 4 },
  full: { partitions: 10, factsPerPartition: [30, 45], dimA: 20, dimB: 10, faults: 6 },
};

/** Text files of a workspace or task, by relative path. */
export type FileMap = Record<string, string>;
