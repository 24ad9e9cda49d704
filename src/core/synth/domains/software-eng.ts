import type { DomainSpec, TableFormat } from '../types';
import { day } from './time';

/** CI history: JSON-lines and CSV test-run shards by build day, suites as CSV, runner pools in SQLite. */
export const SOFTWARE_ENGINEERING: DomainSpec = {
  name: 'software-eng',
  title: 'CI test-run cost accounting',
  field: 'software engineering',
  subDomain: 'continuous integration',
  category: 'software-engineering',
  tools: ['shell', 'python', 'jsonl', 'csv', 'sqlite'],
  faultStory: { 'compact-dates': 'an older uploader that writes build dates as YYYYMMDD', 'unit-drift': 'a runner agent upgrade that reports milliseconds', 'duplicated-records': 'retried CI jobs reported twice', 'shuffled-shard-index': 'a build index written by parallel uploaders', 'stale-cache': 'a dashboard export from an older build' },
  factNoun: 'test runs',
  fact: { id: 'run_id', a: 'suite', b: 'runner', amount: 'duration_s', partition: 'build_date' },
  aliases: { amount: 'elapsed_s', a: 'test_suite' },
  unitDrift: { key: 'duration_ms', scale: '0.001', meaning: 'run time in milliseconds (divide by 1000 for duration_s)' },
  ownFault: { class: 'compact-dates', rule: 'An index line may give build_date in the compact form YYYYMMDD (an older uploader); it means YYYY-MM-DD.' },
  dimA: { file: 'data/suites.csv', format: 'csv', id: 'suite', name: 'path', group: 'team', noun: 'suites' },
  dimB: { file: 'data/runners.db', format: 'sql', table: 'runners', id: 'runner', category: 'pool', unit: 'cost_per_s', noun: 'runners' },
  shardDir: 'data/ci-runs',
  shardFormats: ['jsonl', 'csv'],
  shardExt: (f: TableFormat) => (f === 'jsonl' ? 'jsonl' : 'csv'),
  partitionLabel: day,
  idPrefix: { fact: 't', a: 's', b: 'rn' },
  groups: ['core', 'web', 'infra', 'ml', 'mobile'],
  categories: ['linux-x64', 'linux-arm', 'macos', 'windows', 'gpu'],
  namePool: ['tests/api', 'tests/ui', 'tests/db', 'tests/auth', 'tests/cli', 'tests/sync'],
  amountRange: [4, 900],
  unitRange: [1, 12],
  out: { clean: 'out/clean_runs.csv', enriched: 'out/enriched_runs.csv', report: 'out/cost_by_team_pool.csv', summary: 'out/summary.json', value: 'cost_units', count: 'runs', total: 'cost_units' },
  story: 'CI cost (run duration in seconds times the runner cost per second) per owning team and runner pool',
};
