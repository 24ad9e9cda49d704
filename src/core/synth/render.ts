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
/** Whether dimension B is a binary built inside the image from a text source (SQLite, safetensors, a stripped ELF). */
export const dimBBuilt = (spec: DomainSpec) => spec.dimB.format === 'sql' || spec.dimB.format === 'safetensors' || spec.dimB.format === 'elf';
/** The text file that holds dimension B's rows: the built table's source, or the table itself. */
export const dimBSource = (spec: DomainSpec) => (spec.dimB.format === 'sql' ? spec.dimB.file.replace(/\.db$/, '.sql') : spec.dimB.format === 'safetensors' ? spec.dimB.file.replace(/\.safetensors$/, '.jsonl') : spec.dimB.format === 'elf' ? `data/setup-src/${spec.dimB.file.slice(spec.dimB.file.lastIndexOf('/') + 1)}.tsv` : spec.dimB.file);
/** @deprecated name kept for callers: the source of a built dimension table. */
export const sqlSource = dimBSource;

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
  if (d.format === 'safetensors') return rows.map((r) => JSON.stringify({ [d.id]: r.id, [d.category]: r.category, [d.unit]: r.unit })).join('\n') + '\n';
  if (d.format === 'tsv' || d.format === 'elf') return [[d.id, d.category, d.unit].join('\t'), ...rows.map((r) => [r.id, r.category, r.unit].join('\t'))].join('\n') + '\n';
  return [
    `CREATE TABLE ${d.table} (${d.id} TEXT PRIMARY KEY, ${d.category} TEXT NOT NULL, ${d.unit} INTEGER NOT NULL);`,
    ...rows.map((r) => `INSERT INTO ${d.table} VALUES (${sqlString(r.id)}, ${sqlString(r.category)}, ${r.unit});`),
  ].join('\n') + '\n';
}

export function renderDimA(spec: DomainSpec, rows: DimARow[]): string {
  const d = spec.dimA;
  if (d.format === 'manifest') {
    const entries = rows.flatMap((r) => [`  - ${d.id}: ${r.id}`, `    ${d.name}: ${r.name}`, `    ${d.group}: ${r.group}`]);
    return [`# ${d.noun} manifest: one entry per ${d.id}`, `${d.noun}:`, ...entries].join('\n') + '\n';
  }
  if (d.format === 'csv') return [[d.id, d.name, d.group].join(','), ...rows.map((r) => [r.id, r.name, r.group].join(','))].join('\n') + '\n';
  return JSON.stringify(rows.map((r) => ({ [d.id]: r.id, [d.name]: r.name, [d.group]: r.group })), null, 2) + '\n';
}

/** The safetensors file the image build writes from the JSON-lines source (byte-exact, so it has a digest). */
export function safetensorsBytes(spec: DomainSpec, rows: DimBRow[]): Buffer {
  const d = spec.dimB;
  const header = { __metadata__: { format: 'pt', ids: JSON.stringify(rows.map((r) => r.id)), categories: JSON.stringify(rows.map((r) => r.category)) }, [d.unit]: { dtype: 'I64', shape: [rows.length], data_offsets: [0, 8 * rows.length] } };
  let text = Buffer.from(JSON.stringify(header), 'utf8');
  text = Buffer.concat([text, Buffer.alloc((8 - (text.length % 8)) % 8, 0x20)]);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(text.length));
  const body = Buffer.alloc(8 * rows.length);
  rows.forEach((r, i) => body.writeBigInt64LE(BigInt(r.unit), 8 * i));
  return Buffer.concat([size, text, body]);
}

/**
 * A stripped x86-64 Linux executable (one PT_LOAD segment, no section headers, no symbols) that
 * writes `payload` to stdout and exits 0: the route table compiled into a service binary, as a
 * forensics task meets it. The image build writes the same bytes (BUILD_ELF_PY), so it has a digest.
 */
export function elfBytes(payload: Buffer): Buffer {
  const base = 0x400000n;
  const code = Buffer.concat([
    Buffer.from('b801000000' + 'bf01000000' + '488d3510000000' + 'ba', 'hex'), // write(1, data, len): data follows the code
    u32(payload.length),
    Buffer.from('0f05' + 'b83c000000' + '31ff' + '0f05', 'hex'), // exit(0)
  ]);
  const total = BigInt(64 + 56 + code.length + payload.length);
  const head = Buffer.alloc(64);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(head, 0);
  head.writeUInt16LE(2, 16); head.writeUInt16LE(0x3e, 18); head.writeUInt32LE(1, 20);
  head.writeBigUInt64LE(base + 120n, 24); head.writeBigUInt64LE(64n, 32);
  head.writeUInt16LE(64, 52); head.writeUInt16LE(56, 54); head.writeUInt16LE(1, 56);
  const ph = Buffer.alloc(56);
  ph.writeUInt32LE(1, 0); ph.writeUInt32LE(5, 4);
  ph.writeBigUInt64LE(base, 16); ph.writeBigUInt64LE(base, 24); ph.writeBigUInt64LE(total, 32); ph.writeBigUInt64LE(total, 40); ph.writeBigUInt64LE(0x1000n, 48);
  return Buffer.concat([head, ph, code, payload]);
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

const BUILD_ELF_PY = (spec: DomainSpec) => `import os, struct, sys
# Builds ${spec.dimB.file} (a stripped x86-64 executable that prints the ${spec.dimB.noun} as TSV) at image build time.
root = sys.argv[1]
src = os.path.join(root, ${JSON.stringify(dimBSource(spec))})
dst = os.path.join(root, ${JSON.stringify(spec.dimB.file)})
data = open(src, "rb").read()
base = 0x400000
code = bytes.fromhex("b801000000bf01000000488d3510000000ba") + struct.pack("<I", len(data)) + bytes.fromhex("0f05b83c00000031ff0f05")
total = 64 + 56 + len(code) + len(data)
head = struct.pack("<16sHHIQQQIHHHHHH", b"\\x7fELF\\x02\\x01\\x01" + bytes(9), 2, 0x3E, 1, base + 120, 64, 0, 0, 64, 56, 1, 0, 0, 0)
segment = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, total, total, 0x1000)
os.makedirs(os.path.dirname(dst), exist_ok=True)
with open(dst, "wb") as sink:
    sink.write(head + segment + code + data)
os.chmod(dst, 0o755)
os.remove(src)
os.rmdir(os.path.dirname(src))
`;

const BUILD_SAFETENSORS_PY = (spec: DomainSpec) => `import json, os, struct, sys
# Builds ${spec.dimB.file} (a safetensors shard: ${spec.dimB.unit} as an I64 tensor, ids and ${spec.dimB.category} in the metadata) at image build time.
root = sys.argv[1]
src = os.path.join(root, ${JSON.stringify(dimBSource(spec))})
dst = os.path.join(root, ${JSON.stringify(spec.dimB.file)})
rows = [json.loads(line) for line in open(src, encoding="utf-8") if line.strip()]
compact = (",", ":")
meta = {"format": "pt", "ids": json.dumps([r[${JSON.stringify(spec.dimB.id)}] for r in rows], separators=compact), "categories": json.dumps([r[${JSON.stringify(spec.dimB.category)}] for r in rows], separators=compact)}
header = json.dumps({"__metadata__": meta, ${JSON.stringify(spec.dimB.unit)}: {"dtype": "I64", "shape": [len(rows)], "data_offsets": [0, 8 * len(rows)]}}, separators=compact).encode("utf-8")
header += b" " * (-len(header) % 8)
with open(dst, "wb") as sink:
    sink.write(struct.pack("<Q", len(header)) + header + struct.pack("<%dq" % len(rows), *[r[${JSON.stringify(spec.dimB.unit)}] for r in rows]))
os.remove(src)
`;

const BUILD_DB_PY = (spec: DomainSpec) => `import os, sqlite3, sys
# Builds ${spec.dimB.file} from its SQL script at image build time; the script is removed afterwards.
root = sys.argv[1]
src = os.path.join(root, ${JSON.stringify(dimBSource(spec))})
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
  if (dimBBuilt(spec)) {
    files[dimBSource(spec)] = renderDimB(spec, world.dimB);
    files[BUILD_DB_SCRIPT] = spec.dimB.format === 'sql' ? BUILD_DB_PY(spec) : spec.dimB.format === 'elf' ? BUILD_ELF_PY(spec) : BUILD_SAFETENSORS_PY(spec);
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
  if (d.format === 'safetensors') return bodyLines(text).map((l) => JSON.parse(l) as Record<string, string | number>).map((r) => ({ id: String(r[d.id]), category: String(r[d.category]), unit: Number(r[d.unit]) }));
  if (d.format === 'tsv' || d.format === 'elf') return parseDelimited(text, '\t').map((r) => ({ id: r[d.id], category: r[d.category], unit: Number(r[d.unit]) }));
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
      : d.format === 'manifest'
        ? parseManifest(dimAText).map((r) => ({ id: r[d.id], name: r[d.name], group: r[d.group] }))
        : (JSON.parse(dimAText) as Record<string, string>[]).map((r) => ({ id: r[d.id], name: r[d.name], group: r[d.group] }));
  const dimB = parseDimBRows(spec, need(files, dimBSource(spec)));
  return { ...meta, dimA, dimB, facts, partitions };
}

/** A YAML-like manifest: `  - key: value` opens an entry, `    key: value` continues it. */
export function parseManifest(text: string): Record<string, string>[] {
  const entries: Record<string, string>[] = [];
  for (const line of bodyLines(text)) {
    const m = /^ {2}(- | {2})(\w+): (.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '- ') entries.push({});
    if (entries.length > 0) entries[entries.length - 1][m[2]] = m[3];
  }
  return entries;
}
