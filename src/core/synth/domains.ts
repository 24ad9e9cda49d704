import { TbrlError } from '../errors';
import type { DomainSpec, TableFormat } from './types';

const day = (i: number) => new Date(Date.UTC(2026, 2, 1 + i)).toISOString().slice(0, 10);
const hour = (i: number) => new Date(Date.UTC(2026, 2, 1, i)).toISOString().slice(0, 13);

/** Sales data: CSV/TSV order shards by day, customers as JSON records, products in SQLite. */
export const DATA_ENGINEERING: DomainSpec = {
  name: 'data-eng',
  title: 'Sales data pipeline',
  factNoun: 'orders',
  fact: { id: 'order_id', a: 'customer_id', b: 'sku', amount: 'qty', partition: 'day' },
  aliases: { amount: 'quantity', a: 'cust_id' },
  dimA: { file: 'data/customers.json', format: 'json-array', id: 'customer_id', name: 'name', group: 'region', noun: 'customers' },
  dimB: { file: 'data/products.db', format: 'sql', table: 'products', id: 'sku', category: 'category', unit: 'unit_price_cents', noun: 'products' },
  shardDir: 'data/orders',
  shardFormats: ['csv', 'tsv'],
  shardExt: (f: TableFormat) => (f === 'tsv' ? 'tsv' : 'csv'),
  partitionLabel: day,
  idPrefix: { fact: 'o', a: 'c', b: 'p' },
  groups: ['north', 'south', 'east', 'west', 'central'],
  categories: ['books', 'garden', 'kitchen', 'toys', 'audio', 'sports'],
  namePool: ['ada', 'bo', 'cy', 'di', 'eli', 'fay', 'gus', 'hal', 'ivy', 'jo', 'kai', 'lu'],
  amountRange: [1, 9],
  unitRange: [150, 9900],
  out: { clean: 'out/clean_orders.csv', enriched: 'out/enriched_orders.csv', report: 'out/revenue_by_region_category.csv', summary: 'out/summary.json', value: 'revenue_cents', count: 'orders', total: 'revenue_cents' },
  story: 'revenue (quantity times unit price, in cents) per customer region and product category',
};

/** Request logs: key=value and JSON-lines shards by hour, hosts as CSV, routes as TSV. */
export const LOG_FORENSICS: DomainSpec = {
  name: 'log-forensics',
  title: 'Request log forensics',
  factNoun: 'requests',
  fact: { id: 'req_id', a: 'host', b: 'route', amount: 'duration_ms', partition: 'hour' },
  aliases: { amount: 'latency_ms', a: 'hostname' },
  dimA: { file: 'data/hosts.csv', format: 'csv', id: 'host', name: 'name', group: 'datacenter', noun: 'hosts' },
  dimB: { file: 'data/routes.tsv', format: 'tsv', table: 'routes', id: 'route', category: 'service', unit: 'cost_weight', noun: 'routes' },
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

export const DOMAINS: Record<string, DomainSpec> = { [DATA_ENGINEERING.name]: DATA_ENGINEERING, [LOG_FORENSICS.name]: LOG_FORENSICS };

export function domainByName(name: string): DomainSpec {
  const d = DOMAINS[name];
  if (!d) throw new TbrlError('SYNTH_UNKNOWN_DOMAIN', `unknown synthesis domain "${name}"`, `use one of: ${Object.keys(DOMAINS).join(', ')} (e.g. --domain data-eng).`);
  return d;
}
