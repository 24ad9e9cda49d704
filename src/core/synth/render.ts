import { TbrlError } from '../errors';
import type { DimARow, DimBRow, DomainSpec, FactRow, FileMap, Partition, TableFormat, World } from './types';

/**
 * Renderers from W to real input files, and one parser per renderer back to W. The SQLite database
 * is rendered as a SQL script plus a build step (setup/build_db.py) that the task's Dockerfile runs
 * with the image's python3, so no native SQLite binding is needed on the host; generation also runs
 * the build with the host's python3 and reads the database back (gates.ts).
 */

export const BUILD_DB_SCRIPT = 'setup/build_db.py';

export const indexPath = (spec: DomainSpec) => `${spec.shardDir}/_index.tsv`;
export const shardPath = (spec: DomainSpec, p: Partition) => `${spec.shardDir}/${p.file}`;
export const lateDir = (spec: DomainSpec) => `${spec.shardDir}/late`;
export const latePath = (spec: DomainSpec) => `${lateDir(spec)}/late-arrivals.jsonl`;
export const sqlSource = (spec: DomainSpec) => spec.dimB.file.replace(/\.db$/, '.sql');

/** Keys of a shard in column order (a drifted shard renames one). */
export function shardKeys(spec: DomainSpec): string[] {
  return [spec.fact.id, spec.fact.a, spec.fact.b, spec.fact.amount];
}

export function renderFactLine(format: TableFormat, keys: string[], row: FactRow): string {
  const values = [row.id, row.a, row.b, String(row.amount)];
  switch (format) {
    case 'csv':
      return values.join(',');
    case 'tsv':
      return values.join('\t');
    case 'jsonl':
      return JSON.stringify(Object.fromEntries(keys.map((k, i) => [k, i === 3 ? row.amount : values[i]])));
    case 'kv':
      return keys.map((k, i) => `${k}=${values[i]}`).join(' ');
    default:
      throw new TbrlError('SYNTH_FORMAT', `format ${format} cannot hold fact rows`, 'use csv, tsv, jsonl or kv for shards.');
  }
}

export function renderShard(spec: DomainSpec, p: Partition, rows: FactRow[]): string {
  const keys = shardKeys(spec);
  const lines = rows.map((r) => renderFactLine(p.format, keys, r));
  if (p.format === 'csv') lines.unshift(keys.join(','));
  if (p.format === 'tsv') lines.unshift(keys.join('\t'));
  return lines.join('\n') + '\n';
}

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

export function renderDimB(spec: DomainSpec, rows: DimBRow[]): string {
  const d = spec.dimB;
  if (d.format === 'tsv') return [[d.id, d.category, d.unit].join('\t'), ...rows.map((r) => [r.id, r.category, r.unit].join('\t'))].join('\n') + '\n';
  return [
    `CREATE TABLE ${d.table} (${d.id} TEXT PRIMARY KEY, ${d.category} TEXT NOT NULL, ${d.unit} INTEGER NOT NULL);`,
    ...rows.map((r) => `INSERT INTO ${d.table} VALUES (${sqlString(r.id)}, ${sqlString(r.category)}, ${r.unit});`),
  ].join('\n') + '\n';
}

export function renderDimA(spec: DomainSpec, rows: DimARow[]): string {
  const d = spec.dimA;
  if (d.format === 'csv') return [[d.id, d.name, d.group].join(','), ...rows.map((r) => [r.id, r.name, r.group].join(','))].join('\n') + '\n';
  return JSON.stringify(rows.map((r) => ({ [d.id]: r.id, [d.name]: r.name, [d.group]: r.group })), null, 2) + '\n';
}

const BUILD_DB_PY = (spec: DomainSpec) => `import os, sqlite3, sys
# Builds ${spec.dimB.file} from its SQL script at image build time; the script is removed afterwards.
root = sys.argv[1]
src = os.path.join(root, ${JSON.stringify(sqlSource(spec))})
dst = os.path.join(root, ${JSON.stringify(spec.dimB.file)})
con = sqlite3.connect(dst)
con.executescript(open(src, encoding="utf-8").read())
con.commit()
con.close()
os.remove(src)
`;

/** The clean (fault-free) input files of W, keyed by path under the app root. */
export function renderWorld(spec: DomainSpec, world: World): FileMap {
  const files: FileMap = {};
  files[indexPath(spec)] = [`file\t${spec.fact.partition}`, ...world.partitions.map((p) => `${p.file}\t${p.label}`)].join('\n') + '\n';
  for (const p of world.partitions) files[shardPath(spec, p)] = renderShard(spec, p, world.facts.filter((f) => f.partition === p.index));
  files[spec.dimA.file] = renderDimA(spec, world.dimA);
  if (spec.dimB.format === 'sql') {
    files[sqlSource(spec)] = renderDimB(spec, world.dimB);
    files[BUILD_DB_SCRIPT] = BUILD_DB_PY(spec);
  } else {
    files[spec.dimB.file] = renderDimB(spec, world.dimB);
  }
  return files;
}

// ------------------------------------------------------------------ parsers

function need(files: FileMap, path: string): string {
  const text = files[path];
  if (text === undefined) throw new TbrlError('SYNTH_ROUNDTRIP', `rendered files lack ${path}`, 'this is a renderer bug: every table must be rendered.');
  return text;
}

const bodyLines = (text: string) => text.split('\n').filter((l) => l !== '');

function parseDelimited(text: string, sep: string): Record<string, string>[] {
  const [head, ...rows] = bodyLines(text);
  const keys = head.split(sep);
  return rows.map((r) => Object.fromEntries(r.split(sep).map((v, i) => [keys[i], v])));
}

export function parseShardRecords(format: TableFormat, text: string): Record<string, string>[] {
  if (format === 'csv') return parseDelimited(text, ',');
  if (format === 'tsv') return parseDelimited(text, '\t');
  if (format === 'jsonl') return bodyLines(text).map((l) => Object.fromEntries(Object.entries(JSON.parse(l) as Record<string, unknown>).map(([k, v]) => [k, String(v)])));
  if (format === 'kv') return bodyLines(text).map((l) => Object.fromEntries(l.split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])));
  throw new TbrlError('SYNTH_FORMAT', `format ${format} has no shard parser`, 'use csv, tsv, jsonl or kv.');
}

export function formatOfFile(file: string): TableFormat {
  if (file.endsWith('.csv')) return 'csv';
  if (file.endsWith('.tsv')) return 'tsv';
  if (file.endsWith('.jsonl')) return 'jsonl';
  if (file.endsWith('.log')) return 'kv';
  throw new TbrlError('SYNTH_FORMAT', `cannot tell the format of ${file}`, 'shards end in .csv, .tsv, .jsonl or .log.');
}

export function parseDimBRows(spec: DomainSpec, text: string): DimBRow[] {
  const d = spec.dimB;
  if (d.format === 'tsv') return parseDelimited(text, '\t').map((r) => ({ id: r[d.id], category: r[d.category], unit: Number(r[d.unit]) }));
  const rows: DimBRow[] = [];
  const re = /^INSERT INTO \w+ VALUES \('((?:[^']|'')*)', '((?:[^']|'')*)', (-?\d+)\);$/;
  for (const line of bodyLines(text)) {
    const m = re.exec(line);
    if (m) rows.push({ id: m[1].replace(/''/g, "'"), category: m[2].replace(/''/g, "'"), unit: Number(m[3]) });
  }
  return rows;
}

/** Parse rendered (fault-free) inputs back into W. */
export function parseWorld(spec: DomainSpec, files: FileMap, meta: Pick<World, 'domain' | 'tier' | 'seed'>): World {
  const index = parseDelimited(need(files, indexPath(spec)), '\t');
  const partitions: Partition[] = index.map((r, i) => ({ index: i, file: r.file, label: r[spec.fact.partition], format: formatOfFile(r.file) }));
  const facts: FactRow[] = [];
  for (const p of partitions) {
    for (const r of parseShardRecords(p.format, need(files, shardPath(spec, p)))) {
      facts.push({ id: r[spec.fact.id], a: r[spec.fact.a], b: r[spec.fact.b], amount: Number(r[spec.fact.amount]), partition: p.index });
    }
  }
  const d = spec.dimA;
  const dimAText = need(files, d.file);
  const dimA: DimARow[] =
    d.format === 'csv'
      ? parseDelimited(dimAText, ',').map((r) => ({ id: r[d.id], name: r[d.name], group: r[d.group] }))
      : (JSON.parse(dimAText) as Record<string, string>[]).map((r) => ({ id: r[d.id], name: r[d.name], group: r[d.group] }));
  const dimB = parseDimBRows(spec, need(files, spec.dimB.format === 'sql' ? sqlSource(spec) : spec.dimB.file));
  return { ...meta, dimA, dimB, facts, partitions };
}
