import type { DomainSpec, TableFormat } from '../types';
import { day } from './time';

/** Quantum jobs: JSON-lines and CSV job shards by day, devices as CSV, circuits as a safetensors shard. */
export const QUANTUM: DomainSpec = {
  name: 'quantum',
  title: 'Quantum job gate-load accounting',
  field: 'quantum computing',
  subDomain: 'QPU job accounting',
  category: 'scientific-computing',
  tools: ['shell', 'python', 'jsonl', 'csv', 'safetensors (binary header parsing)'],
  faultStory: { 'qualified-ids': 'a newer SDK that qualifies the backend with its provider', 'unit-drift': 'a provider API that reports thousands of shots', 'category-drift': 'circuit families typed by hand (GHZ, Qft)', 'missing-records': 'jobs whose results came back after the queue drained', 'stale-cache': 'calibration-day totals cached by the scheduler' },
  factNoun: 'jobs',
  fact: { id: 'job_id', a: 'device', b: 'circuit', amount: 'shots', partition: 'day' },
  aliases: { amount: 'n_shots', a: 'backend' },
  unitDrift: { key: 'kshots', scale: '1000', meaning: 'shots in thousands, three decimals (multiply by 1000 for shots)' },
  ownFault: { class: 'qualified-ids', rule: 'Some shards qualify device with its provider (e.g. qpu-east:q03); the device is the part after the colon.' },
  dimA: { file: 'data/devices.csv', format: 'csv', id: 'device', name: 'label', group: 'provider', noun: 'devices' },
  dimB: { file: 'data/circuits.safetensors', format: 'safetensors', table: 'circuits', id: 'circuit', category: 'family', unit: 'depth', noun: 'circuits' },
  shardDir: 'data/jobs',
  shardFormats: ['jsonl', 'csv'],
  shardExt: (f: TableFormat) => (f === 'jsonl' ? 'jsonl' : 'csv'),
  partitionLabel: day,
  idPrefix: { fact: 'j', a: 'q', b: 'cq' },
  groups: ['qpu-east', 'qpu-west', 'sim-cloud'],
  categories: ['ghz', 'qft', 'vqe', 'qaoa', 'grover'],
  namePool: ['falcon', 'osprey', 'aria', 'forte', 'ankaa'],
  amountRange: [100, 4000],
  unitRange: [4, 120],
  out: { clean: 'out/clean_jobs.csv', enriched: 'out/enriched_jobs.csv', report: 'out/gate_load_by_provider_family.csv', summary: 'out/summary.json', value: 'shot_depth', count: 'jobs', total: 'shot_depth' },
  story: 'gate load (shots times circuit depth) per device provider and circuit family',
};
