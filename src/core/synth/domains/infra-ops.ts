import type { DomainSpec, TableFormat } from '../types';
import { hour } from './time';

/** Cluster metrics: key=value and JSON-lines usage shards by hour, nodes as a YAML-style manifest, services in SQLite. */
export const INFRA_OPS: DomainSpec = {
  name: 'infra-ops',
  title: 'Cluster CPU accounting',
  field: 'infrastructure management',
  subDomain: 'cluster chargeback',
  category: 'system-administration',
  tools: ['shell', 'python', 'manifest parsing', 'key=value parsing', 'sqlite'],
  faultStory: { 'deprecated-key': 'nodes registered by an old agent that still writes pool for cluster', 'unit-drift': 'an agent version that reports CPU seconds', 'schema-drift': 'an old agent version reporting cpu_millis', 'shuffled-shard-index': 'an index rebuilt by a concurrent compaction', 'stale-cache': 'a chargeback report cached by the billing job' },
  factNoun: 'usage samples',
  fact: { id: 'sample_id', a: 'node', b: 'service', amount: 'cpu_ms', partition: 'hour' },
  aliases: { amount: 'cpu_millis', a: 'node_name' },
  unitDrift: { key: 'cpu_s', scale: '1000', meaning: 'CPU seconds, three decimals (multiply by 1000 for cpu_ms)' },
  ownFault: { class: 'deprecated-key', key: 'pool', rule: 'Some manifest entries still use the deprecated key pool; it means cluster.' },
  dimA: { file: 'data/nodes.yaml', format: 'manifest', id: 'node', name: 'hostname', group: 'cluster', noun: 'nodes' },
  dimB: { file: 'data/services.db', format: 'sql', table: 'services', id: 'service', category: 'tier', unit: 'weight', noun: 'services' },
  shardDir: 'data/metrics',
  shardFormats: ['kv', 'jsonl'],
  shardExt: (f: TableFormat) => (f === 'jsonl' ? 'jsonl' : 'log'),
  partitionLabel: hour,
  idPrefix: { fact: 'u', a: 'n', b: 'sv' },
  groups: ['prod-eu', 'prod-us', 'staging'],
  categories: ['frontend', 'backend', 'batch', 'storage'],
  namePool: ['ip-10-0-1', 'ip-10-0-2', 'ip-10-1-7', 'ip-10-2-3', 'ip-10-4-9'],
  amountRange: [10, 5000],
  unitRange: [1, 8],
  out: { clean: 'out/clean_samples.csv', enriched: 'out/enriched_samples.csv', report: 'out/cpu_by_cluster_tier.csv', summary: 'out/summary.json', value: 'weighted_cpu_ms', count: 'samples', total: 'weighted_cpu_ms' },
  story: 'weighted CPU time (CPU milliseconds times the service weight) per node cluster and service tier',
};
