import type { DomainSpec, TableFormat } from '../types';
import { day } from './time';

/** Sales data: CSV/TSV order shards by day, customers as JSON records, products in SQLite. */
export const DATA_ENGINEERING: DomainSpec = {
  name: 'data-eng',
  title: 'Sales data pipeline',
  field: 'data engineering',
  subDomain: 'sales ETL',
  category: 'data-processing',
  tools: ['shell', 'python', 'csv', 'json', 'sqlite'],
  faultStory: { 'replayed-records': 'an upstream replay that re-sends orders in a later day\'s export', 'unit-drift': 'a wholesale feed that reports thousands of units', 'schema-drift': 'an old export spells quantity and customer id differently', 'stale-cache': 'last night\'s revenue report left in /app/cache' },
  factNoun: 'orders',
  fact: { id: 'order_id', a: 'customer_id', b: 'sku', amount: 'qty', partition: 'day' },
  aliases: { amount: 'quantity', a: 'cust_id' },
  unitDrift: { key: 'qty_k', scale: '1000', meaning: 'quantity in thousands of units, three decimals (multiply by 1000 for qty)' },
  ownFault: { class: 'replayed-records', rule: 'An order re-sent in a later day\'s shard (same order_id) counts once, in the day it first appeared.' },
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
