import type { DomainSpec, TableFormat } from '../types';
import { hour } from './time';

/** Evaluation sweeps: JSON-lines and TSV eval shards by hour, models as JSON records, checkpoints as a safetensors shard. */
export const AI_RESEARCH: DomainSpec = {
  name: 'ai-research',
  title: 'Evaluation sweep compute accounting',
  field: 'AI/CS research',
  subDomain: 'model evaluation',
  category: 'machine-learning',
  tools: ['shell', 'python', 'jsonl', 'tsv', 'safetensors (binary header parsing)'],
  faultStory: { 'orphan-shard': 'a shard from an earlier evaluation step left next to the current ones', 'unit-drift': 'an eval harness that reports thousands of samples', 'category-drift': 'checkpoint families spelled by hand in different cases', 'missing-records': 'eval results uploaded after the sweep closed', 'stale-cache': 'a leaderboard snapshot from an earlier sweep' },
  factNoun: 'evaluations',
  fact: { id: 'eval_id', a: 'model', b: 'ckpt', amount: 'samples', partition: 'hour' },
  aliases: { amount: 'n_samples', a: 'model_id' },
  unitDrift: { key: 'samples_k', scale: '1000', meaning: 'samples in thousands, three decimals (multiply by 1000 for samples)' },
  ownFault: { class: 'orphan-shard', rule: 'Only shards listed in the index belong to the data: a shard file the index does not list (left from an earlier evaluation step) must be ignored.' },
  dimA: { file: 'data/models.json', format: 'json-array', id: 'model', name: 'codename', group: 'lab', noun: 'models' },
  dimB: { file: 'data/checkpoints.safetensors', format: 'safetensors', table: 'checkpoints', id: 'ckpt', category: 'family', unit: 'gflops_per_sample', noun: 'checkpoints' },
  shardDir: 'data/evals',
  shardFormats: ['jsonl', 'tsv'],
  shardExt: (f: TableFormat) => (f === 'jsonl' ? 'jsonl' : 'tsv'),
  partitionLabel: hour,
  idPrefix: { fact: 'e', a: 'm', b: 'k' },
  groups: ['lab-a', 'lab-b', 'lab-c', 'lab-d'],
  categories: ['dense', 'moe', 'ssm', 'hybrid', 'distilled'],
  namePool: ['otter', 'heron', 'lynx', 'wren', 'ibis', 'marten'],
  amountRange: [16, 512],
  unitRange: [2, 40],
  out: { clean: 'out/clean_evals.csv', enriched: 'out/enriched_evals.csv', report: 'out/compute_by_lab_family.csv', summary: 'out/summary.json', value: 'gflops', count: 'evals', total: 'gflops' },
  story: 'evaluation compute (samples times the checkpoint\'s GFLOPs per sample) per model lab and checkpoint family',
};
