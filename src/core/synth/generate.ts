import { createHash } from 'node:crypto';
import { compileWorkflow, type Workflow } from './dag';
import { domainByName } from './domains';
import { checkContract, PPRS_LAMBDA, type EvidenceKind, type ProgressContract } from './contract';
import { basename, computeOutputs, type Outputs } from './expected';
import { applyFaults, cacheDir } from './faults';
import { PROGRESS_PY } from './grader-program';
import { BUILD_DB_SCRIPT, dimBBuilt, dimBSource, elfBytes, indexPath, latePath, parseDimBRows, renderFactLine, renderWorld, safetensorsBytes, shardKeys } from './render';
import { solutionScript, solverSteps, type SolverStep } from './solver-program';
import { verifierProgram, VERIFIER_TESTS, VERIFIER_WEIGHTS } from './verifier-program';
import type { DomainSpec, FactRow, FileMap, ScaleTier } from './types';
import { TB_COMPOSE } from '../tasks/scaffold';
import { drawWorld, type Draw, type FaultSpec } from './world';
import { instructionFor } from './instruction';

export interface SynthOptions { domain: string; tier: ScaleTier; seed: number; faultCount?: number }

/** The synthesis options a task was generated from, relative to the task's tests/ parent. */
export const SYNTH_RECIPE_FILE = 'tests/synth.json';

/**
 * The 19 coverage axes every task is labelled on (tests/coverage.json). Four of them describe the
 * horizon: stages on the critical path, estimated actions along it, DAG width, and total stages.
 */
export interface CoverageLabels {
  /** Generator name in the registry (e.g. data-eng). */
  domain: string;
  /** The Tev paper's domain (one of the seven). */
  field: string;
  subDomain: string;
  scale: ScaleTier;
  horizon: number;
  horizonWorkload: number;
  dagWidth: number;
  stageCount: number;
  difficulty: Workflow['difficulty'];
  workflowStages: string[];
  criticalPath: string[];
  /** Estimated actions per stage (the workload the horizon sums). */
  stageWorkload: Record<string, number>;
  toolCapabilities: string[];
  artifactRoles: Record<string, string>;
  artifactFormats: string[];
  relationTypes: string[];
  faultClasses: string[];
  verifierChecks: string[];
  progressNodes: string[];
}

/** Axes counted in the corpus coverage table (single values or lists; maps are counted by value). */
export const COVERAGE_AXES: ReadonlyArray<keyof CoverageLabels> = ['field', 'domain', 'subDomain', 'scale', 'horizon', 'horizonWorkload', 'dagWidth', 'stageCount', 'difficulty', 'workflowStages', 'criticalPath', 'stageWorkload', 'toolCapabilities', 'artifactRoles', 'artifactFormats', 'relationTypes', 'faultClasses', 'verifierChecks', 'progressNodes'];

/** Everything a synthesised task is made of, before gates decide whether it is written. */
export interface SynthesizedTask {
  id: string;
  spec: DomainSpec;
  draw: Draw;
  workflow: Workflow;
  contract: ProgressContract;
  expected: Outputs;
  /** Clean render of W (before faults), keyed by path under the app root. */
  cleanInputs: FileMap;
  /** The workspace the agent starts from (after faults), keyed by path under the app root. */
  inputs: FileMap;
  /** Task directory files in Terminal-Bench layout (inputs under app/). */
  taskFiles: FileMap;
  steps: SolverStep[];
  instruction: string;
  labels: CoverageLabels;
}

export const PIPELINE_ENTRY = 'pipeline.sh';
const PIPELINE_TIMEOUT_SEC = 60;
const relData = (p: string) => p.replace(/^data\//, '');

export const TEV_BASE_IMAGE = 'ghcr.io/laude-institute/t-bench/python-3-13:20250620';

export function synthesize(options: SynthOptions): SynthesizedTask {
  const spec = domainByName(options.domain);
  const draw = drawWorld(spec, options.tier, options.seed, options.faultCount);
  const { world, faults } = draw;
  const workflow = compileWorkflow(options.tier, faults.map((f) => f.class), { partitions: world.partitions.length, facts: world.facts.length, dimA: world.dimA.length, dimB: world.dimB.length });
  const expected = computeOutputs(spec, world);
  const cleanInputs = renderWorld(spec, world);
  const inputs = applyFaults(spec, world, faults, cleanInputs);
  const id = `tev-${spec.name}-${options.tier}-s${options.seed}`;

  const table = (t: { header: string[]; rows: string[][] }) => ({ header: t.header, rows: t.rows });
  const stagesOf = (ids: string[]) => workflow.stages.filter((s) => ids.includes(s.id) || (s.fault && ids.includes(repairTarget(s.fault)))).map((s) => s.id);
  const contract: ProgressContract = {
    version: 1,
    lambda: PPRS_LAMBDA,
    nodes: [
      { id: 'clean', weight: 0.3, preconditions: [], artifact: spec.out.clean, description: `deduplicated, complete ${spec.factNoun} in partition order`, stages: stagesOf(['locate-inputs', 'read-index', 'parse-shards', 'dedupe-and-merge', 'write-clean']), evidence: OUTPUT_EVIDENCE },
      { id: 'enriched', weight: 0.25, preconditions: ['clean'], artifact: spec.out.enriched, description: `${spec.factNoun} joined to ${spec.dimA.noun} and ${spec.dimB.noun}`, stages: stagesOf(['load-dimension-a', 'load-dimension-b', 'join-dimensions', 'write-enriched']), evidence: OUTPUT_EVIDENCE },
      { id: 'report', weight: 0.2, preconditions: ['enriched'], artifact: spec.out.report, description: 'the grouped report', stages: stagesOf(['aggregate', 'write-report']), evidence: OUTPUT_EVIDENCE },
      { id: 'summary', weight: 0.1, preconditions: ['report'], artifact: spec.out.summary, description: 'summary counts', stages: ['write-summary'], evidence: OUTPUT_EVIDENCE },
      { id: 'pipeline', weight: 0.15, preconditions: ['summary'], artifact: PIPELINE_ENTRY, description: 'a re-runnable pipeline that recomputes from its input', stages: ['package-pipeline'], evidence: ['inputs-intact', 'recomputes-holdout'] },
    ],
  };
  checkContract(contract);

  const holdout = world.partitions[draw.holdoutPartition];
  const held = computeOutputs(spec, world, world.facts.filter((f) => f.partition !== holdout.index));
  const holdoutReport = held.report;
  const inputsDigest = dataDigest(spec, inputs);
  const progressJson = {
    ...contract,
    outputs: { clean: spec.out.clean, enriched: spec.out.enriched, report: spec.out.report, summary: spec.out.summary },
    expected: { clean: table(expected.clean), enriched: table(expected.enriched), report: table(expected.report), summary: expected.summary },
    expected_holdout: { clean: table(held.clean), enriched: table(held.enriched), report: table(held.report), summary: held.summary },
    inputs: inputsDigest,
    pipeline: { entry: PIPELINE_ENTRY, data: 'data', index: relData(indexPath(spec)), holdout_file: holdout.file, timeout: PIPELINE_TIMEOUT_SEC, report_name: basename(spec.out.report), expected_report: table(holdoutReport) },
  };

  const extra = extraRecord(spec, draw);
  const verifierSpec = {
    names: { clean: basename(spec.out.clean), enriched: basename(spec.out.enriched), report: basename(spec.out.report), summary: basename(spec.out.summary) },
    entry: PIPELINE_ENTRY,
    data: 'data',
    out_dir: 'out',
    index: relData(indexPath(spec)),
    timeout: PIPELINE_TIMEOUT_SEC * 2,
    expected: { clean: table(expected.clean), enriched: table(expected.enriched), report: table(expected.report), summary: expected.summary },
    inputs: inputsDigest,
    extra: { shard: extra.shard, line: extra.line, report: table(computeOutputs(spec, world, [...world.facts, extra.fact]).report) },
  };

  const renames: Record<string, string> = { [spec.aliases.amount]: spec.fact.amount, [spec.aliases.a]: spec.fact.a };
  const solverConfig = {
    shard_dir: relData(spec.shardDir),
    index: '_index.tsv',
    fact: spec.fact,
    renames,
    // Drifted measure keys and the exact factor back to the canonical unit (the domain's unit drift).
    units: spec.unitDrift ? { [spec.unitDrift.key]: spec.unitDrift.scale } : {},
    // Deprecated spellings of dimension-A keys (a domain's deprecated-key fault) and the key they mean.
    dim_a: { file: relData(spec.dimA.file), format: spec.dimA.format, id: spec.dimA.id, group: spec.dimA.group, aliases: spec.ownFault?.key ? { [spec.ownFault.key]: spec.dimA.group } : {} },
    dim_b: { file: relData(spec.dimB.file), format: spec.dimB.format, table: spec.dimB.table, id: spec.dimB.id, category: spec.dimB.category, unit: spec.dimB.unit },
    outputs: verifierSpec.names,
    enriched_header: expected.enriched.header,
    report_header: expected.report.header,
  };
  const steps = solverSteps(JSON.stringify(solverConfig));
  const instruction = instructionFor(spec, PIPELINE_ENTRY);

  const labels: CoverageLabels = {
    domain: spec.name,
    field: spec.field,
    subDomain: spec.subDomain,
    scale: options.tier,
    horizon: workflow.horizon,
    horizonWorkload: workflow.horizonWorkload,
    dagWidth: workflow.width,
    stageCount: workflow.stages.length,
    difficulty: workflow.difficulty,
    workflowStages: workflow.stages.map((s) => s.id),
    criticalPath: workflow.criticalPath,
    stageWorkload: Object.fromEntries(workflow.stages.map((s) => [s.id, s.workload])),
    toolCapabilities: [...spec.tools],
    artifactRoles: artifactRoles(spec, inputs),
    artifactFormats: [...new Set([...world.partitions.map((p) => p.format), spec.dimA.format, spec.dimB.format, 'csv-output', 'json-output'])].sort(),
    relationTypes: relationTypes(faults),
    faultClasses: faults.map((f) => f.class),
    verifierChecks: VERIFIER_TESTS.filter((n) => n !== 'test_strict_verdict').map((n) => n.replace(/^test_/, '')),
    progressNodes: contract.nodes.map((n) => n.id),
  };

  const taskFiles: FileMap = {
    Dockerfile: dockerfile(spec),
    'docker-compose.yaml': TB_COMPOSE,
    'run-tests.sh': RUN_TESTS,
    'tests/test_outputs.py': verifierProgram(JSON.stringify(verifierSpec)),
    'tests/progress.py': PROGRESS_PY,
    'tests/progress.json': JSON.stringify(progressJson, null, 1) + '\n',
    'tests/pytest.ini': '[pytest]\n',
    'tests/coverage.json': JSON.stringify(labels, null, 2) + '\n',
    // How to regenerate this task, so `tbrl validate` can re-run the generation gates.
    // faultCount only when asked for: the tier's default also decides the domain's own fault classes.
    [SYNTH_RECIPE_FILE]: JSON.stringify({ domain: spec.name, tier: options.tier, seed: options.seed, ...(options.faultCount !== undefined ? { faultCount: options.faultCount } : {}) }, null, 2) + '\n',
    'test_weights.json': JSON.stringify(VERIFIER_WEIGHTS, null, 2) + '\n',
    'solution.sh': solutionScript(steps),
  };
  for (const [path, text] of Object.entries(inputs)) taskFiles[`app/${path}`] = text;
  return { id, spec, draw, workflow, contract, expected, cleanInputs, inputs, taskFiles, steps, instruction, labels };
}

const OUTPUT_EVIDENCE: EvidenceKind[] = ['inputs-intact', 'reproduced-by-entry', 'tracks-holdout'];

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * Digest of the data directory as the image holds it: text files by SHA-256 of their bytes, the
 * SQLite table by SHA-256 of its rows (tab-joined, one per line, in rowid order), because the
 * database file's bytes depend on the SQLite version that built it.
 */
export interface DataDigest { files: Record<string, string>; tables: Record<string, { table: string; columns: string[]; digest: string }> }

export function dataDigest(spec: DomainSpec, inputs: FileMap): DataDigest {
  const files: Record<string, string> = {};
  for (const [path, text] of Object.entries(inputs)) {
    if (path.startsWith('data/') && !(dimBBuilt(spec) && path === dimBSource(spec))) files[relData(path)] = sha256(text);
  }
  const tables: DataDigest['tables'] = {};
  if (spec.dimB.format === 'safetensors') files[relData(spec.dimB.file)] = createHash('sha256').update(safetensorsBytes(spec, parseDimBRows(spec, inputs[dimBSource(spec)]))).digest('hex');
  if (spec.dimB.format === 'elf') files[relData(spec.dimB.file)] = createHash('sha256').update(elfBytes(Buffer.from(inputs[dimBSource(spec)], 'utf8'))).digest('hex');
  if (spec.dimB.format === 'sql') {
    const rows = parseDimBRows(spec, inputs[dimBSource(spec)]);
    tables[relData(spec.dimB.file)] = { table: spec.dimB.table, columns: [spec.dimB.id, spec.dimB.category, spec.dimB.unit], digest: sha256(rows.map((r) => `${r.id}\t${r.category}\t${r.unit}`).join('\n')) };
  }
  return { files, tables };
}

function relationTypes(faults: FaultSpec[]): string[] {
  const out = ['fact->dimension-a (many-to-one)', 'fact->dimension-b (many-to-one)', 'shard->partition (index)', 'report<-fact (group-by aggregate)'];
  if (faults.some((f) => f.class === 'missing-records')) out.push('late-record->partition (by label)');
  if (faults.some((f) => f.class === 'stale-cache')) out.push('cache->report (stale copy)');
  if (faults.some((f) => f.class === 'unit-drift')) out.push('shard-measure->canonical unit (scale)');
  if (faults.some((f) => f.class === 'timezone-skew')) out.push('index-label->UTC (offset)');
  if (faults.some((f) => f.class === 'compact-dates')) out.push('index-label->ISO date (compact)');
  if (faults.some((f) => f.class === 'orphan-shard')) out.push('unlisted-shard->ignored (index is authoritative)');
  if (faults.some((f) => f.class === 'replayed-records')) out.push('replayed-record->first delivery (by partition)');
  if (faults.some((f) => f.class === 'deprecated-key')) out.push('dimension-a key->canonical key (deprecated alias)');
  if (faults.some((f) => f.class === 'negated-measure')) out.push('shard-measure->magnitude (sign)');
  if (faults.some((f) => f.class === 'qualified-ids')) out.push('qualified-key->dimension-a id (namespace)');
  return out;
}

function repairTarget(fault: string): string {
  return ({ 'category-drift': 'load-dimension-b', 'deprecated-key': 'load-dimension-a', 'stale-cache': 'aggregate' } as Record<string, string>)[fault] ?? 'dedupe-and-merge';
}

/** A record the verifier appends to a shard: known effect on the report, written in that shard's dialect. */
function extraRecord(spec: DomainSpec, draw: Draw): { shard: string; line: string; fact: FactRow } {
  const { world, faults } = draw;
  const p = world.partitions[0];
  const drift = faults.find((f): f is Extract<FaultSpec, { class: 'schema-drift' }> => f.class === 'schema-drift' && f.partition === p.index);
  const keys = shardKeys(spec).map((k) => (drift && k === (drift.column === 'amount' ? spec.fact.amount : spec.fact.a) ? (drift.column === 'amount' ? spec.aliases.amount : spec.aliases.a) : k));
  const fact: FactRow = { id: `${spec.idPrefix.fact}x${String(world.seed % 10000).padStart(4, '0')}`, a: world.dimA[world.dimA.length - 1].id, b: world.dimB[0].id, amount: 2, partition: p.index };
  return { shard: `${relData(spec.shardDir)}/${p.file}`, line: renderFactLine(p.format, keys, fact), fact };
}

function artifactRoles(spec: DomainSpec, inputs: FileMap): Record<string, string> {
  const roles: Record<string, string> = {};
  for (const path of Object.keys(inputs).sort()) {
    if (path === indexPath(spec)) roles[path] = 'input:shard-index';
    else if (path === latePath(spec)) roles[path] = 'input:late-arrivals';
    else if (path.startsWith(`${spec.shardDir}/`)) roles[path] = 'input:fact-shard';
    else if (path === spec.dimA.file) roles[path] = 'input:dimension';
    else if (dimBBuilt(spec) && path === dimBSource(spec)) roles[spec.dimB.file] = `input:dimension(${({ sql: 'sqlite', elf: 'stripped-binary' } as Record<string, string>)[spec.dimB.format] ?? spec.dimB.format})`;
    else if (path === spec.dimB.file) roles[path] = 'input:dimension';
    else if (path.startsWith(`${cacheDir}/`)) roles[path] = 'distractor:stale-cache';
    else if (path === BUILD_DB_SCRIPT) roles[path] = 'build:removed-at-image-build';
  }
  for (const p of [spec.out.clean, spec.out.enriched, spec.out.report, spec.out.summary]) roles[p] = 'output:graded';
  roles[PIPELINE_ENTRY] = 'output:entry-point';
  roles['tests/progress.py'] = 'hidden:progress-grader';
  roles['tests/test_outputs.py'] = 'hidden:strict-verifier';
  roles['reference-solver'] = 'reference:solver (not shipped to the agent)';
  return roles;
}

function dockerfile(spec: DomainSpec): string {
  const build = dimBBuilt(spec) ? `RUN python3 /app/${BUILD_DB_SCRIPT} /app && rm -rf /app/setup\n` : '';
  return `FROM ${TEV_BASE_IMAGE}\n\nWORKDIR /app\nCOPY app/ /app/\n${build}RUN mkdir -p /app/out\n`;
}


// The task's own pytest.ini keeps an agent's /app/pytest.ini or conftest.py out of the verifier's way.
export const RUN_TESTS = `#!/bin/bash
export TEST_DIR="\${TEST_DIR:-/tests}"
cd /app
python3 -m pytest -p no:cacheprovider -c "$TEST_DIR/pytest.ini" --rootdir "$TEST_DIR" -rA "$TEST_DIR/test_outputs.py"
`;
