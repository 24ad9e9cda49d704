import { TbrlError } from '../errors';
import { computeOutputs, csvText, summaryText, basename } from './expected';
import { indexPath, latePath, parseShardRecords, renderFactLine, renderShard, shardKeys, dimBSource } from './render';
import type { DomainSpec, FileMap, TableFormat, World } from './types';
import { FAULT_ORDER, type FaultSpec } from './world';

/**
 * Fault classes as declarative data (world.ts draws them) with a pure apply and a pure revert
 * each: revert(apply(files)) === files byte for byte. Applying in FAULT_ORDER and reverting in the
 * reverse order is what keeps line positions unambiguous.
 */

export const cacheDir = 'cache';

interface Ctx { spec: DomainSpec; world: World }

function shardFileOf(ctx: Ctx, factId: string): { path: string; format: TableFormat } {
  const f = ctx.world.facts.find((x) => x.id === factId);
  if (!f) throw new TbrlError('SYNTH_FAULT', `fault names unknown record ${factId}`, 'draw faults from the same world they are applied to.');
  const p = ctx.world.partitions[f.partition];
  return { path: `${ctx.spec.shardDir}/${p.file}`, format: p.format };
}

function linePrefix(ctx: Ctx, format: TableFormat, id: string): string {
  const key = ctx.spec.fact.id;
  if (format === 'csv') return `${id},`;
  if (format === 'tsv') return `${id}\t`;
  if (format === 'jsonl') return `{"${key}":"${id}"`;
  return `${key}=${id} `;
}

const split = (text: string) => text.slice(0, -1).split('\n');
const join = (lines: string[]) => lines.join('\n') + '\n';

function get(files: FileMap, path: string): string {
  const t = files[path];
  if (t === undefined) throw new TbrlError('SYNTH_FAULT', `fault targets ${path}, which is not in the workspace`, 'apply faults to the rendered inputs of the same world.');
  return t;
}

/** Renames between canonical and drifted key spellings on one shard. */
function renameKey(text: string, format: TableFormat, from: string, to: string): string {
  const lines = split(text);
  if (format === 'csv' || format === 'tsv') {
    const sep = format === 'csv' ? ',' : '\t';
    lines[0] = lines[0].split(sep).map((k) => (k === from ? to : k)).join(sep);
    return join(lines);
  }
  const pattern = format === 'jsonl' ? `"${from}":` : ` ${from}=`;
  const replacement = format === 'jsonl' ? `"${to}":` : ` ${to}=`;
  return join(lines.map((l) => l.split(pattern).join(replacement)));
}

function driftNames(ctx: Ctx, fault: Extract<FaultSpec, { class: 'schema-drift' }>) {
  return fault.column === 'amount' ? { canonical: ctx.spec.fact.amount, drifted: ctx.spec.aliases.amount } : { canonical: ctx.spec.fact.a, drifted: ctx.spec.aliases.a };
}

function categoryLineIndex(ctx: Ctx, lines: string[], id: string): number {
  const d = ctx.spec.dimB;
  const i = lines.findIndex((l) => (d.format === 'sql' ? l.startsWith(`INSERT INTO ${d.table} VALUES ('${id}', `) : d.format === 'safetensors' ? l.startsWith(`{"${d.id}":"${id}",`) : l.startsWith(`${id}\t`)));
  if (i < 0) throw new TbrlError('SYNTH_FAULT', `no ${d.noun} row ${id} to drift`, 'draw category drift from the rendered world.');
  return i;
}

function setCategory(ctx: Ctx, line: string, text: string): string {
  if (ctx.spec.dimB.format === 'safetensors') {
    const row = JSON.parse(line) as Record<string, unknown>;
    row[ctx.spec.dimB.category] = text;
    return JSON.stringify(row);
  }
  if (ctx.spec.dimB.format === 'sql') return line.replace(/^(INSERT INTO \w+ VALUES \('(?:[^']|'')*', )'(?:[^']|'')*'/, (_, head: string) => `${head}'${text.replace(/'/g, "''")}'`);
  const cells = line.split('\t');
  cells[1] = text;
  return cells.join('\t');
}

/** A measure in the drifted unit: amount / scale exactly (decimals for a coarser unit). */
export function toDriftedUnit(amount: number, scale: string): string {
  const factor = Number(scale);
  if (factor < 1) return String(amount * Math.round(1 / factor));
  const digits = scale.length - 1;
  const s = String(amount).padStart(digits + 1, '0');
  return `${s.slice(0, -digits)}.${s.slice(-digits)}`;
}

/** The canonical integer measure of a drifted value (the inverse of toDriftedUnit). */
export function fromDriftedUnit(text: string, scale: string): number {
  const factor = Number(scale);
  if (factor < 1) return Number(text) / Math.round(1 / factor);
  return Number(text.replace('.', ''));
}

/** Rewrites one shard's measure between canonical and drifted key and unit, line by line. */
function convertShard(text: string, format: TableFormat, from: string, to: string, convert: (value: string) => string): string {
  const lines = split(text);
  if (format === 'csv' || format === 'tsv') {
    const sep = format === 'csv' ? ',' : '\t';
    const header = lines[0].split(sep);
    const col = header.indexOf(from);
    if (col < 0) throw new TbrlError('SYNTH_FAULT', `shard has no ${from} column to convert`, 'apply unit drift to a shard in its canonical dialect.');
    header[col] = to;
    return join([header.join(sep), ...lines.slice(1).map((l) => { const cells = l.split(sep); cells[col] = convert(cells[col]); return cells.join(sep); })]);
  }
  const pattern = format === 'jsonl' ? new RegExp(`"${from}":([0-9.]+)`) : new RegExp(`(?<=^| )${from}=([0-9.]+)(?= |$)`);
  return join(lines.map((l) => l.replace(pattern, (_, v: string) => (format === 'jsonl' ? `"${to}":${convert(v)}` : `${to}=${convert(v)}`))));
}

function unitDriftOf(ctx: Ctx): NonNullable<DomainSpec['unitDrift']> {
  const u = ctx.spec.unitDrift;
  if (!u) throw new TbrlError('SYNTH_FAULT', `domain ${ctx.spec.name} declares no unit drift`, 'draw unit-drift only for domains whose spec has unitDrift.');
  return u;
}

/** An hourly UTC label (2026-03-01T05) as local time with its offset (2026-03-01T07+02:00). */
export function toLocalLabel(label: string, offsetHours: number): string {
  const local = new Date(Date.parse(`${label}:00:00Z`) + offsetHours * 3_600_000).toISOString().slice(0, 13);
  return `${local}${offsetHours < 0 ? '-' : '+'}${String(Math.abs(offsetHours)).padStart(2, '0')}:00`;
}

/** The UTC hour label of a local label with an offset (the inverse of toLocalLabel). */
export function toUtcLabel(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2})([+-])(\d{2}):00$/.exec(text);
  if (!m) return text;
  const offset = (m[2] === '-' ? -1 : 1) * Number(m[3]);
  return new Date(Date.parse(`${m[1]}:00:00Z`) - offset * 3_600_000).toISOString().slice(0, 13);
}

export const toCompactDate = (label: string) => label.replace(/-/g, '');
export const fromCompactDate = (text: string) => (/^\d{8}$/.test(text) ? `${text.slice(0, 4)}-${text.slice(4, 6)}-${text.slice(6)}` : text);

/** Rewrites the label of one shard's line in the index (found by file name, so any line order works). */
function relabel(files: FileMap, spec: DomainSpec, file: string, convert: (label: string) => string): void {
  const lines = split(get(files, indexPath(spec)));
  const at = lines.findIndex((l, i) => i > 0 && l.split('\t')[0] === file);
  if (at < 0) throw new TbrlError('SYNTH_FAULT', `index lists no shard ${file}`, 'draw label faults from the rendered index.');
  const [name, label] = lines[at].split('\t');
  lines[at] = `${name}\t${convert(label)}`;
  files[indexPath(spec)] = join(lines);
}

/** Rewrites the value of the first of `keys` a shard holds, on every record line (keys in the shard's dialect). */
function rewriteShardValues(text: string, format: TableFormat, keys: string[], convert: (value: string) => string): string {
  const lines = split(text);
  if (format === 'csv' || format === 'tsv') {
    const sep = format === 'csv' ? ',' : '\t';
    const col = lines[0].split(sep).findIndex((k) => keys.includes(k));
    if (col < 0) throw new TbrlError('SYNTH_FAULT', `shard has none of ${keys.join(', ')}`, 'rewrite a key the shard holds.');
    return join([lines[0], ...lines.slice(1).map((l) => { const cells = l.split(sep); cells[col] = convert(cells[col]); return cells.join(sep); })]);
  }
  const names = keys.map((k) => k.replace(/[^\w]/g, '')).join('|');
  if (format === 'jsonl') return join(lines.map((l) => l.replace(new RegExp(`"(${names})":("[^"]*"|[-0-9.]+)`), (_, k: string, v: string) => `"${k}":${v.startsWith('"') ? `"${convert(v.slice(1, -1))}"` : convert(v)}`)));
  return join(lines.map((l) => l.replace(new RegExp(`(?<=^| )(${names})=(\\S+)`), (_, k: string, v: string) => `${k}=${convert(v)}`)));
}

/** Keys a shard may hold the measure (or dimension-A key) under, in any dialect the faults write. */
const measureKeys = (spec: DomainSpec) => [spec.fact.amount, spec.aliases.amount, ...(spec.unitDrift ? [spec.unitDrift.key] : [])];
const dimAKeys = (spec: DomainSpec) => [spec.fact.a, spec.aliases.a];

function groupOf(world: World, id: string): string {
  const row = world.dimA.find((r) => r.id === id);
  if (!row) throw new TbrlError('SYNTH_FAULT', `no dimension-A row ${id}`, 'qualify ids of the same world.');
  return row.group;
}

function deprecatedKeyOf(spec: DomainSpec): string {
  const key = spec.ownFault?.key;
  if (!key || spec.dimA.format !== 'manifest') throw new TbrlError('SYNTH_FAULT', `domain ${spec.name} declares no deprecated manifest key`, 'draw deprecated-key only for a manifest dimension with ownFault.key.');
  return key;
}

/** Renames the group key of the listed manifest entries (each entry opens with `  - id: value`). */
function renameEntryKey(text: string, spec: DomainSpec, ids: string[], from: string, to: string): string {
  const lines = split(text);
  for (const id of ids) {
    const start = lines.indexOf(`  - ${spec.dimA.id}: ${id}`);
    if (start < 0) throw new TbrlError('SYNTH_FAULT', `manifest has no entry ${id}`, 'draw deprecated keys from the rendered manifest.');
    let at = start + 1;
    while (at < lines.length && !lines[at].startsWith(`    ${from}: `)) at++;
    if (at >= lines.length) throw new TbrlError('SYNTH_FAULT', `manifest entry ${id} has no ${from}`, 'rename keys the entry holds.');
    lines[at] = `    ${to}: ${lines[at].slice(`    ${from}: `.length)}`;
  }
  return join(lines);
}

function orphanPath(spec: DomainSpec, fault: Extract<FaultSpec, { class: 'orphan-shard' }>): string {
  return `${spec.shardDir}/${fault.file}`;
}

function orphanText(spec: DomainSpec, fault: Extract<FaultSpec, { class: 'orphan-shard' }>): string {
  return renderShard(spec, { index: -1, file: fault.file, label: '', format: fault.format }, fault.records.map((r) => ({ ...r, partition: -1 })));
}

export function staleWorld(world: World, fault: Extract<FaultSpec, { class: 'stale-cache' }>): World {
  const dropped = new Set(fault.droppedFactIds);
  const bumped = new Set(fault.bumpedFactIds);
  return { ...world, facts: world.facts.filter((f) => !dropped.has(f.id)).map((f) => (bumped.has(f.id) ? { ...f, amount: f.amount + 1 } : f)) };
}

export function staleCacheFiles(ctx: Ctx, fault: Extract<FaultSpec, { class: 'stale-cache' }>): FileMap {
  const stale = staleWorld(ctx.world, fault);
  const outputs = computeOutputs(ctx.spec, stale);
  return {
    [`${cacheDir}/${basename(ctx.spec.out.report)}`]: csvText(outputs.report),
    [`${cacheDir}/${basename(ctx.spec.out.summary)}`]: summaryText(outputs.summary),
    [`${cacheDir}/README.txt`]: `Cached results of the nightly job (${ctx.spec.title}). Refreshed ${ctx.world.partitions[0].label}.\n`,
  };
}

export function applyFault(spec: DomainSpec, world: World, fault: FaultSpec, input: FileMap): FileMap {
  const ctx: Ctx = { spec, world };
  const files = { ...input };
  switch (fault.class) {
    case 'missing-records': {
      const late: string[] = [];
      for (const id of fault.factIds) {
        const { path, format } = shardFileOf(ctx, id);
        const lines = split(get(files, path));
        const at = lines.findIndex((l) => l.startsWith(linePrefix(ctx, format, id)));
        if (at < 0) throw new TbrlError('SYNTH_FAULT', `record ${id} is not in ${path}`, 'apply missing-records before other faults.');
        lines.splice(at, 1);
        files[path] = join(lines);
        const f = world.facts.find((x) => x.id === id)!;
        late.push(JSON.stringify({ [spec.fact.id]: f.id, [spec.fact.a]: f.a, [spec.fact.b]: f.b, [spec.fact.amount]: f.amount, [spec.fact.partition]: world.partitions[f.partition].label }));
      }
      files[latePath(spec)] = join(late);
      return files;
    }
    case 'duplicated-records': {
      for (const id of fault.factIds) {
        const { path, format } = shardFileOf(ctx, id);
        const lines = split(get(files, path));
        const line = lines.find((l) => l.startsWith(linePrefix(ctx, format, id)));
        if (line === undefined) throw new TbrlError('SYNTH_FAULT', `record ${id} is not in ${path}`, 'duplicate records that are in the shards.');
        lines.push(line);
        files[path] = join(lines);
      }
      return files;
    }
    case 'schema-drift': {
      const p = world.partitions[fault.partition];
      const path = `${spec.shardDir}/${p.file}`;
      const { canonical, drifted } = driftNames(ctx, fault);
      files[path] = renameKey(get(files, path), p.format, canonical, drifted);
      return files;
    }
    case 'unit-drift': {
      const p = world.partitions[fault.partition];
      const path = `${spec.shardDir}/${p.file}`;
      const u = unitDriftOf(ctx);
      files[path] = convertShard(get(files, path), p.format, spec.fact.amount, u.key, (v) => toDriftedUnit(Number(v), u.scale));
      return files;
    }
    case 'timezone-skew':
      relabel(files, spec, world.partitions[fault.partition].file, (l) => toLocalLabel(l, fault.offsetHours));
      return files;
    case 'compact-dates':
      relabel(files, spec, world.partitions[fault.partition].file, toCompactDate);
      return files;
    case 'orphan-shard': {
      const path = orphanPath(spec, fault);
      if (files[path] !== undefined) throw new TbrlError('SYNTH_FAULT', `${path} already exists`, 'draw an orphan shard name no partition uses.');
      files[path] = orphanText(spec, fault);
      return files;
    }
    case 'replayed-records': {
      for (const r of fault.replays) {
        const f = world.facts.find((x) => x.id === r.id);
        if (!f) throw new TbrlError('SYNTH_FAULT', `fault names unknown record ${r.id}`, 'draw replays from the same world.');
        const p = world.partitions[r.partition];
        const path = `${spec.shardDir}/${p.file}`;
        files[path] = join([...split(get(files, path)), renderFactLine(p.format, shardKeys(spec), f)]);
      }
      return files;
    }
    case 'deprecated-key':
      files[spec.dimA.file] = renameEntryKey(get(files, spec.dimA.file), spec, fault.ids, spec.dimA.group, deprecatedKeyOf(spec));
      return files;
    case 'negated-measure': {
      const path = `${spec.shardDir}/${world.partitions[fault.partition].file}`;
      files[path] = rewriteShardValues(get(files, path), world.partitions[fault.partition].format, measureKeys(spec), (v) => `-${v}`);
      return files;
    }
    case 'qualified-ids': {
      const path = `${spec.shardDir}/${world.partitions[fault.partition].file}`;
      files[path] = rewriteShardValues(get(files, path), world.partitions[fault.partition].format, dimAKeys(spec), (v) => `${groupOf(world, v)}:${v}`);
      return files;
    }
    case 'category-drift': {
      const path = dimBSource(spec);
      const lines = split(get(files, path));
      for (const v of fault.variants) {
        const i = categoryLineIndex(ctx, lines, v.id);
        lines[i] = setCategory(ctx, lines[i], v.text);
      }
      files[path] = join(lines);
      return files;
    }
    case 'shuffled-shard-index': {
      const [head, ...body] = split(get(files, indexPath(spec)));
      files[indexPath(spec)] = join([head, ...fault.order.map((i) => body[i])]);
      return files;
    }
    case 'stale-cache':
      return { ...files, ...staleCacheFiles(ctx, fault) };
  }
}

export function revertFault(spec: DomainSpec, world: World, fault: FaultSpec, input: FileMap): FileMap {
  const ctx: Ctx = { spec, world };
  const files = { ...input };
  switch (fault.class) {
    case 'missing-records': {
      const records = parseShardRecords('jsonl', get(files, latePath(spec)));
      delete files[latePath(spec)];
      for (const r of records) {
        const { path, format } = shardFileOf(ctx, r[spec.fact.id]);
        const lines = split(get(files, path));
        const headed = format === 'csv' || format === 'tsv' ? 1 : 0;
        const ids = parseShardRecords(format, get(files, path)).map((x) => x[spec.fact.id]);
        const after = ids.findIndex((id) => id > r[spec.fact.id]);
        const line = renderFactLine(format, shardKeys(spec), { id: r[spec.fact.id], a: r[spec.fact.a], b: r[spec.fact.b], amount: Number(r[spec.fact.amount]), partition: 0 });
        lines.splice(after < 0 ? lines.length : after + headed, 0, line);
        files[path] = join(lines);
      }
      return files;
    }
    case 'duplicated-records': {
      for (const id of [...fault.factIds].reverse()) {
        const { path, format } = shardFileOf(ctx, id);
        const lines = split(get(files, path));
        const prefix = linePrefix(ctx, format, id);
        let last = -1;
        lines.forEach((l, i) => { if (l.startsWith(prefix)) last = i; });
        lines.splice(last, 1);
        files[path] = join(lines);
      }
      return files;
    }
    case 'schema-drift': {
      const p = world.partitions[fault.partition];
      const path = `${spec.shardDir}/${p.file}`;
      const { canonical, drifted } = driftNames(ctx, fault);
      files[path] = renameKey(get(files, path), p.format, drifted, canonical);
      return files;
    }
    case 'unit-drift': {
      const p = world.partitions[fault.partition];
      const path = `${spec.shardDir}/${p.file}`;
      const u = unitDriftOf(ctx);
      files[path] = convertShard(get(files, path), p.format, u.key, spec.fact.amount, (v) => String(fromDriftedUnit(v, u.scale)));
      return files;
    }
    case 'timezone-skew':
      relabel(files, spec, world.partitions[fault.partition].file, toUtcLabel);
      return files;
    case 'compact-dates':
      relabel(files, spec, world.partitions[fault.partition].file, fromCompactDate);
      return files;
    case 'orphan-shard':
      delete files[orphanPath(spec, fault)];
      return files;
    case 'replayed-records': {
      for (const r of [...fault.replays].reverse()) {
        const p = world.partitions[r.partition];
        const path = `${spec.shardDir}/${p.file}`;
        const lines = split(get(files, path));
        const prefix = linePrefix(ctx, p.format, r.id);
        let last = -1;
        lines.forEach((l, i) => { if (l.startsWith(prefix)) last = i; });
        if (last < 0) throw new TbrlError('SYNTH_FAULT', `no replay of ${r.id} in ${path}`, 'revert replays on the files they were applied to.');
        lines.splice(last, 1);
        files[path] = join(lines);
      }
      return files;
    }
    case 'deprecated-key':
      files[spec.dimA.file] = renameEntryKey(get(files, spec.dimA.file), spec, fault.ids, deprecatedKeyOf(spec), spec.dimA.group);
      return files;
    case 'negated-measure': {
      const path = `${spec.shardDir}/${world.partitions[fault.partition].file}`;
      files[path] = rewriteShardValues(get(files, path), world.partitions[fault.partition].format, measureKeys(spec), (v) => v.replace(/^-/, ''));
      return files;
    }
    case 'qualified-ids': {
      const path = `${spec.shardDir}/${world.partitions[fault.partition].file}`;
      files[path] = rewriteShardValues(get(files, path), world.partitions[fault.partition].format, dimAKeys(spec), (v) => v.slice(v.indexOf(':') + 1));
      return files;
    }
    case 'category-drift': {
      const path = dimBSource(spec);
      const lines = split(get(files, path));
      for (const v of fault.variants) {
        const i = categoryLineIndex(ctx, lines, v.id);
        lines[i] = setCategory(ctx, lines[i], v.text.trim().toLowerCase());
      }
      files[path] = join(lines);
      return files;
    }
    case 'shuffled-shard-index': {
      const [head, ...body] = split(get(files, indexPath(spec)));
      const restored = new Array<string>(body.length);
      fault.order.forEach((orig, pos) => { restored[orig] = body[pos]; });
      files[indexPath(spec)] = join([head, ...restored]);
      return files;
    }
    case 'stale-cache':
      for (const path of Object.keys(staleCacheFiles(ctx, fault))) delete files[path];
      return files;
  }
}

export function applyFaults(spec: DomainSpec, world: World, faults: FaultSpec[], files: FileMap): FileMap {
  return sortedFaults(faults).reduce((acc, f) => applyFault(spec, world, f, acc), files);
}

export function revertFaults(spec: DomainSpec, world: World, faults: FaultSpec[], files: FileMap): FileMap {
  return [...sortedFaults(faults)].reverse().reduce((acc, f) => revertFault(spec, world, f, acc), files);
}

function sortedFaults(faults: FaultSpec[]): FaultSpec[] {
  return [...faults].sort((x, y) => FAULT_ORDER.indexOf(x.class) - FAULT_ORDER.indexOf(y.class));
}

