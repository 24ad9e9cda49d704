import type { DomainSpec, TableFormat } from '../types';
import { hour } from './time';

/** Request logs: key=value and JSON-lines shards by hour, hosts as CSV, routes compiled into a stripped service binary. */
export const LOG_FORENSICS: DomainSpec = {
  name: 'log-forensics',
  title: 'Request log forensics',
  field: 'security & forensics',
  subDomain: 'request-log forensics',
  category: 'debugging',
  tools: ['shell', 'python', 'log parsing', 'csv', 'jsonl', 'binary inspection'],
  faultStory: { 'timezone-skew': 'a collector in another region that labels its hour in local time', 'unit-drift': 'an older proxy build that logs seconds', 'duplicated-records': 'a log shipper that retried and wrote lines twice', 'missing-records': 'lines that reached the collector after rotation' },
  factNoun: 'requests',
  fact: { id: 'req_id', a: 'host', b: 'route', amount: 'duration_ms', partition: 'hour' },
  aliases: { amount: 'latency_ms', a: 'hostname' },
  unitDrift: { key: 'duration_s', scale: '1000', meaning: 'request duration in seconds, three decimals (multiply by 1000 for duration_ms)' },
  ownFault: { class: 'timezone-skew', rule: 'An index line whose hour carries a UTC offset (e.g. 2026-03-01T07+02:00) gives the collector\'s local hour: use the UTC hour it means (2026-03-01T05).' },
  dimA: { file: 'data/hosts.csv', format: 'csv', id: 'host', name: 'name', group: 'datacenter', noun: 'hosts' },
  dimB: { file: 'data/bin/routectl', format: 'elf', table: 'routes', id: 'route', category: 'service', unit: 'cost_weight', noun: 'routes' },
  shardDir: 'data/logs',
  shardFormats: ['kv', 'jsonl'],
  shardExt: (f: TableFormat) => (f === 'jsonl' ? 'jsonl' : 'log'),
  partitionLabel: hour,
  idPrefix: { fact: 'r', a: 'h', b: 'rt' },
  groups: ['fra1', 'iad2', 'sin1', 'gru1'],
  categories: ['checkout', 'search', 'auth', 'catalog', 'billing'],
  namePool: ['web', 'api', 'edge', 'batch', 'cache', 'gw'],
  amountRange: [3, 1800],
  unitRange: [1, 5],
  out: { clean: 'out/clean_requests.csv', enriched: 'out/enriched_requests.csv', report: 'out/cost_by_datacenter_service.csv', summary: 'out/summary.json', value: 'weighted_ms', count: 'requests', total: 'weighted_ms' },
  story: 'weighted latency (request duration in ms times the route cost weight) per host datacenter and service',
};
