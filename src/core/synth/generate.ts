import { compileWorkflow, type Workflow } from './dag';
import { domainByName } from './domains';
import { checkContract, PPRS_LAMBDA, type ProgressContract } from './contract';
import { basename, computeOutputs, type Outputs } from './expected';
import { applyFaults, cacheDir } from './faults';
import { PROGRESS_PY } from './grader-program';
import { BUILD_DB_SCRIPT, indexPath, latePath, renderFactLine, renderWorld, shardKeys, sqlSource } from './render';
import { solutionScript, solverSteps, type SolverStep } from './solver-program';
import { verifierProgram, VERIFIER_WEIGHTS } from './verifier-program';
import type { DomainSpec, FactRow, FileMap, ScaleTier } from './types';
import { TB_COMPOSE } from '../tasks/scaffold';
import { drawWorld, type Draw, type FaultSpec } from './world';
import { instructionFor } from './instruction';

export interface SynthOptions { domain: string; tier: ScaleTier; seed: number; faultCount?: number }

/** The synthesis options a task was generated from, relative to the task's tests/ parent. */
export const SYNTH_RECIPE_FILE = 'tests/synth.json';

export interface CoverageLabels {
  domain: string;
  scale: ScaleTier;
  horizon: number;
  difficulty: Workflow['difficulty'];
  workflowStages: string[];
  criticalPath: string[];
  faultClasses: string[];
  artifactRoles: Record<string, string>;
}

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
  const workflow = compileWorkflow(options.tier, faults.map((f) => f.class));
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
      { id: 'clean', weight: 0.3, preconditions: [], artifact: spec.out.clean, description: `deduplicated, complete ${spec.factNoun} in partition order`, stages: stagesOf(['locate-inputs', 'read-index', 'parse-shards', 'dedupe-and-merge', 'write-clean']) },
      { id: 'enriched', weight: 0.25, preconditions: ['clean'], artifact: spec.out.enriched, description: `${spec.factNoun} joined to ${spec.dimA.noun} and ${spec.dimB.noun}`, stages: stagesOf(['load-dimension-a', 'load-dimension-b', 'join-dimensions', 'write-enriched']) },
      { id: 'report', weight: 0.2, preconditions: ['enriched'], artifact: spec.out.report, description: 'the grouped report', stages: stagesOf(['aggregate', 'write-report']) },
      { id: 'summary', weight: 0.1, preconditions: ['report'], artifact: spec.out.summary, description: 'summary counts', stages: ['write-summary'] },
      { id: 'pipeline', weight: 0.15, preconditions: ['summary'], artifact: PIPELINE_ENTRY, description: 'a re-runnable pipeline that recomputes from its input', stages: ['package-pipeline'] },
    ],
  };
  checkContract(contract);

  const holdout = world.partitions[draw.holdoutPartition];
  const holdoutReport = computeOutputs(spec, world, world.facts.filter((f) => f.partition !== holdout.index)).report;
  const progressJson = {
    ...contract,
    outputs: { clean: spec.out.clean, enriched: spec.out.enriched, report: spec.out.report, summary: spec.out.summary },
    expected: { clean: table(expected.clean), enriched: table(expected.enriched), report: table(expected.report), summary: expected.summary },
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
    extra: { shard: extra.shard, line: extra.line, report: table(computeOutputs(spec, world, [...world.facts, extra.fact]).report) },
  };

  const renames: Record<string, string> = { [spec.aliases.amount]: spec.fact.amount, [spec.aliases.a]: spec.fact.a };
  const solverConfig = {
    shard_dir: relData(spec.shardDir),
    index: '_index.tsv',
    fact: spec.fact,
    renames,
    dim_a: { file: relData(spec.dimA.file), format: spec.dimA.format, id: spec.dimA.id, group: spec.dimA.group },
    dim_b: { file: relData(spec.dimB.file), format: spec.dimB.format, table: spec.dimB.table, id: spec.dimB.id, category: spec.dimB.category, unit: spec.dimB.unit },
    outputs: verifierSpec.names,
    enriched_header: expected.enriched.header,
    report_header: expected.report.header,
  };
  const steps = solverSteps(JSON.stringify(solverConfig));
  const instruction = instructionFor(spec, PIPELINE_ENTRY);

  const labels: CoverageLabels = {
    domain: spec.name,
    scale: options.tier,
    horizon: workflow.horizon,
    difficulty: workflow.difficulty,
    workflowStages: workflow.stages.map((s) => s.id),
    criticalPath: workflow.criticalPath,
    faultClasses: faults.map((f) => f.class),
    artifactRoles: artifactRoles(spec, inputs),
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
    [SYNTH_RECIPE_FILE]: JSON.stringify({ domain: spec.name, tier: options.tier, seed: options.seed, faultCount: faults.length }, null, 2) + '\n',
    'test_weights.json': JSON.stringify(VERIFIER_WEIGHTS, null, 2) + '\n',
    'solution.sh': solutionScript(steps),
  };
  for (const [path, text] of Object.entries(inputs)) taskFiles[`app/${path}`] = text;
  return { id, spec, draw, workflow, contract, expected, cleanInputs, inputs, taskFiles, steps, instruction, labels };
}

function repairTarget(fault: string): string {
  return ({ 'category-drift': 'load-dimension-b', 'stale-cache': 'aggregate' } as Record<string, string>)[fault] ?? 'dedupe-and-merge';
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
    else if (path === sqlSource(spec)) roles[spec.dimB.file] = 'input:dimension(sqlite)';
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
  const build = spec.dimB.format === 'sql' ? `RUN python3 /app/${BUILD_DB_SCRIPT} /app && rm -rf /app/setup\n` : '';
  return `FROM ${TEV_BASE_IMAGE}\n\nWORKDIR /app\nCOPY app/ /app/\n${build}RUN mkdir -p /app/out\n`;
}


// The task's own pytest.ini keeps an agent's /app/pytest.ini or conftest.py out of the verifier's way.
export const RUN_TESTS = `#!/bin/bash
export TEST_DIR="\${TEST_DIR:-/tests}"
cd /app
python3 -m pytest -p no:cacheprovider -c "$TEST_DIR/pytest.ini" --rootdir "$TEST_DIR" -rA "$TEST_DIR/test_outputs.py"
`;
