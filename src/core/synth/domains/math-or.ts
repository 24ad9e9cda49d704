import type { DomainSpec, TableFormat } from '../types';
import { day } from './time';

/** Logistics: CSV and key=value shipment shards by day, depots as JSON records, lanes as TSV. */
export const MATH_OR: DomainSpec = {
  name: 'math-or',
  title: 'Shipment lane cost model',
  field: 'math & operations research',
  subDomain: 'logistics cost allocation',
  category: 'mathematics',
  tools: ['shell', 'python', 'csv', 'key=value parsing', 'integer arithmetic'],
  faultStory: { 'negated-measure': 'a planner export that books shipments as outbound debits', 'unit-drift': 'a depot scanner that counts in hundredths of a unit', 'schema-drift': 'a carrier feed that still says qty_units', 'duplicated-records': 'shipments booked twice by two planners' },
  factNoun: 'shipments',
  fact: { id: 'shipment_id', a: 'depot', b: 'lane', amount: 'units', partition: 'day' },
  aliases: { amount: 'qty_units', a: 'depot_id' },
  unitDrift: { key: 'units_c', scale: '0.01', meaning: 'units in hundredths (divide by 100 for units)' },
  ownFault: { class: 'negated-measure', rule: 'Some shards book units as negative numbers (an outbound-debit sign convention); use the magnitude.' },
  dimA: { file: 'data/depots.json', format: 'json-array', id: 'depot', name: 'site', group: 'region', noun: 'depots' },
  dimB: { file: 'data/lanes.tsv', format: 'tsv', table: 'lanes', id: 'lane', category: 'mode', unit: 'cost_per_unit', noun: 'lanes' },
  shardDir: 'data/shipments',
  shardFormats: ['csv', 'kv'],
  shardExt: (f: TableFormat) => (f === 'kv' ? 'log' : 'csv'),
  partitionLabel: day,
  idPrefix: { fact: 'sh', a: 'd', b: 'ln' },
  groups: ['emea', 'amer', 'apac'],
  categories: ['road', 'rail', 'sea', 'air'],
  namePool: ['rotterdam', 'memphis', 'singapore', 'lyon', 'osaka', 'reno'],
  amountRange: [1, 60],
  unitRange: [3, 250],
  out: { clean: 'out/clean_shipments.csv', enriched: 'out/enriched_shipments.csv', report: 'out/cost_by_region_mode.csv', summary: 'out/summary.json', value: 'cost', count: 'shipments', total: 'cost' },
  story: 'transport cost (units shipped times the lane cost per unit) per depot region and transport mode',
};
