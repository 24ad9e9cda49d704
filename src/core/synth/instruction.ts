import { basename } from './expected';
import { indexPath, latePath } from './render';
import type { DomainSpec, TableFormat } from './types';

const FORMAT_NAMES: Record<TableFormat, string> = { elf: 'a stripped executable', csv: 'CSV (.csv)', tsv: 'TSV (.tsv)', jsonl: 'JSON lines (.jsonl)', kv: 'key=value log lines (.log)', 'json-array': 'JSON', sql: 'SQL', manifest: 'a YAML-style manifest', safetensors: 'a safetensors shard' };

/** The task text. It states every rule the data may need, whether or not this task's faults use it. */
export function instructionFor(spec: DomainSpec, entry: string): string {
  const f = spec.fact;
  const a = spec.dimA;
  const b = spec.dimB;
  const dimBText =
    b.format === 'sql' ? `a SQLite database (table \`${b.table}\`: ${b.id}, ${b.category}, ${b.unit})`
      : b.format === 'elf' ? `a stripped x86-64 executable (no symbols) with the ${b.noun} table compiled in: run it and it prints them as TSV with header ${b.id}, ${b.category}, ${b.unit}`
      : b.format === 'safetensors' ? `a safetensors file: the I64 tensor \`${b.unit}\` holds ${b.unit} per row; the header's __metadata__ holds "ids" (${b.id}) and "categories" (${b.category}) as JSON-encoded lists in the same order`
        : `a TSV file with header ${b.id}, ${b.category}, ${b.unit}`;
  const dimAText = a.format === 'manifest' ? `a YAML-style manifest (a list under \`${a.noun}:\`, one entry per ${a.id} with ${a.id}, ${a.name}, ${a.group})` : a.format === 'csv' ? `CSV (${a.id}, ${a.name}, ${a.group})` : `a JSON array of records (${a.id}, ${a.name}, ${a.group})`;
  return [
    `# ${spec.title}`,
    '',
    `Inputs live under /app/data. The ${spec.factNoun} are split into shards under /app/${spec.shardDir}; /app/${indexPath(spec)} lists every shard file with its ${f.partition} (tab-separated, header \`file\\t${f.partition}\`). Shards are ${spec.shardFormats.map((x) => FORMAT_NAMES[x]).join(' or ')} with the fields ${f.id}, ${f.a}, ${f.b}, ${f.amount}. /app/${a.file} holds the ${a.noun} as ${dimAText} and /app/${b.file} is ${dimBText}.`,
    '',
    `Compute ${spec.story}. Write, with \`\\n\` line endings, comma-separated, a header row and no quoting:`,
    '',
    `1. /app/${spec.out.clean}: ${[f.id, f.a, f.b, f.amount, f.partition].join(',')} — one row per distinct ${f.id}, ordered by ${f.partition} then ${f.id}.`,
    `2. /app/${spec.out.enriched}: ${[f.id, f.partition, a.group, b.category, spec.out.value].join(',')} — the same rows and order, joined to ${a.noun} and ${b.noun}; ${spec.out.value} = ${f.amount} × ${b.unit}.`,
    `3. /app/${spec.out.report}: ${[a.group, b.category, spec.out.count, spec.out.total].join(',')} — one row per (${a.group}, ${b.category}) pair, ordered by ${a.group} then ${b.category}.`,
    `4. /app/${spec.out.summary}: a JSON object {"records": rows of the clean file, "partitions": distinct ${f.partition} values among them, "total": sum of ${spec.out.total}, "groups": rows of the report}, all integers.`,
    `5. /app/${entry}: an executable script so that \`bash /app/${entry} INPUT_DIR OUTPUT_DIR\` recomputes all four files (same names, e.g. OUTPUT_DIR/${basename(spec.out.report)}) from a directory laid out like /app/data. It will be run on other data.`,
    '',
    `Produce the four files by running your script (\`bash /app/${entry} /app/data /app/out\`): progress is credited only for outputs that your ${entry} reproduces from the data, and only while /app/data is unchanged (treat it as read-only). You may build ${entry} up stage by stage; files written by hand or copied from elsewhere earn nothing.`,
    '',
    'The data is messy. Take care of every case below that occurs:',
    `- Some shards spell a field the old way: ${spec.aliases.amount} means ${f.amount} and ${spec.aliases.a} means ${f.a}.`,
    ...(spec.unitDrift ? [`- Some shards report ${spec.unitDrift.key} instead of ${f.amount}: ${spec.unitDrift.meaning}; the result is a whole number.`] : []),
    ...(spec.ownFault ? [`- ${spec.ownFault.rule}`] : []),
    `- A record may appear more than once; keep one per ${f.id}.`,
    `- Records that arrived late are in /app/${latePath(spec)} (JSON lines that carry a field named ${f.partition}); they belong to the data.`,
    `- ${b.category} values may differ in case or surrounding spaces; use the lower-case, trimmed value.`,
    `- The index lines are not necessarily in ${f.partition} order; shard file names say nothing about order.`,
    `- /app/cache may hold results of an earlier run; they are out of date.`,
    '',
  ].join('\n');
}
