/**
 * The seven Tev domains (issue #20): each renders its own artifacts that parse back to W, declares
 * its fault classes reversibly, has a workload-weighted horizon and 19 coverage labels; built
 * binaries (safetensors) are byte-exact so the input digest holds; corpus coverage tables, label
 * filters and decontamination behave as documented. Host gates for the new domains run in
 * synth-gates.test.ts; containers in test/integration/synth.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { DOMAINS } from '../../src/core/synth/domains';
import { synthesize, COVERAGE_AXES } from '../../src/core/synth/generate';
import { staticGates } from '../../src/core/synth/gates';
import { PAPER_DOMAINS } from '../../src/core/synth/types';
import { parseManifest, renderDimA, safetensorsBytes, dimBSource, parseDimBRows, BUILD_DB_SCRIPT, elfBytes } from '../../src/core/synth/render';
import { compileWorkflow } from '../../src/core/synth/dag';
import { coverageTable, formatCoverageTable, labelsMatch, taskMatchesFilter } from '../../src/core/synth/coverage';
import { decontaminate, ngrams, tokens } from '../../src/core/synth/decontam';
import { synthCommand } from '../../src/cli/commands/synth';
import { writeSynthesizedTask } from '../../src/core/synth/write';

describe('seven domains', () => {
  it('cover the paper\'s seven fields, one generator each, with their own artifact formats', () => {
    const specs = Object.values(DOMAINS);
    assert.deepEqual(specs.map((d) => d.field).sort(), [...PAPER_DOMAINS].sort());
    const formats = new Set(specs.flatMap((d) => [...d.shardFormats, d.dimA.format, d.dimB.format]));
    for (const f of ['csv', 'tsv', 'jsonl', 'kv', 'json-array', 'sql', 'manifest', 'safetensors']) assert.ok(formats.has(f as never), f);
    assert.equal(new Set(specs.map((d) => d.out.report)).size, specs.length, 'each domain names its own report');
  });

  it('pass the static gates (round trip, reversible faults, no shared code, no leak) at every tier', () => {
    for (const domain of Object.keys(DOMAINS)) {
      for (const tier of ['unit', 'small', 'full'] as const) {
        for (const seed of [1, 2]) {
          const t = synthesize({ domain, tier, seed, faultCount: 6 });
          const failed = staticGates(t).filter((g) => !g.passed);
          assert.deepEqual(failed, [], `${t.id}`);
        }
      }
    }
  });

  it('renders a manifest and a safetensors shard that round-trip (the shard byte-exact with python3\'s build)', () => {
    const infra = synthesize({ domain: 'infra-ops', tier: 'unit', seed: 3 });
    const manifest = infra.inputs['data/nodes.yaml'];
    assert.match(manifest, /^nodes:$/m);
    assert.deepEqual(parseManifest(manifest).map((r) => r.node), infra.draw.world.dimA.map((r) => r.id));
    assert.equal(renderDimA(infra.spec, infra.draw.world.dimA), manifest);

    const q = synthesize({ domain: 'quantum', tier: 'unit', seed: 3, faultCount: 6 });
    const dir = mkdtempSync(join(tmpdir(), 'tbrl-st-'));
    try {
      const src = dimBSource(q.spec);
      execFileSync('mkdir', ['-p', join(dir, 'data')]);
      writeFileSync(join(dir, src), q.inputs[src]);
      writeFileSync(join(dir, 'build.py'), q.inputs[BUILD_DB_SCRIPT]);
      execFileSync('python3', [join(dir, 'build.py'), dir]);
      assert.equal(existsSync(join(dir, src)), false, 'the source is removed after the build');
      const built = readFileSync(join(dir, q.spec.dimB.file));
      assert.ok(built.equals(safetensorsBytes(q.spec, parseDimBRows(q.spec, q.inputs[src]))), 'python3 builds exactly the bytes the digest describes');
      const header = JSON.parse(built.subarray(8, 8 + Number(built.readBigUInt64LE(0))).toString('utf8'));
      assert.equal(header.depth.dtype, 'I64');
      const progress = JSON.parse(q.taskFiles['tests/progress.json']);
      assert.ok(progress.inputs.files['circuits.safetensors']);
      assert.equal(progress.inputs.files['circuits.jsonl'], undefined, 'the build source is not part of the image');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('compiles the route table into a stripped x86-64 binary that prints it (byte-exact with python3\'s build, category drift included)', () => {
    const t = synthesize({ domain: 'log-forensics', tier: 'small', seed: 4, faultCount: 6 });
    assert.ok(t.draw.faults.some((f) => f.class === 'category-drift'), 'the drifted spellings are compiled in too');
    const dir = mkdtempSync(join(tmpdir(), 'tbrl-elf-'));
    try {
      const src = dimBSource(t.spec);
      execFileSync('mkdir', ['-p', join(dir, src, '..')]);
      writeFileSync(join(dir, src), t.inputs[src]);
      writeFileSync(join(dir, 'build.py'), t.inputs[BUILD_DB_SCRIPT]);
      execFileSync('python3', [join(dir, 'build.py'), dir]);
      assert.equal(existsSync(join(dir, src)), false, 'the source is removed after the build');
      const binary = join(dir, t.spec.dimB.file);
      const built = readFileSync(binary);
      assert.ok(built.equals(elfBytes(Buffer.from(t.inputs[src], 'utf8'))), 'python3 builds exactly the bytes the digest describes');
      assert.equal(built.subarray(0, 4).toString('latin1'), '\x7fELF');
      assert.equal(built.readUInt16LE(60), 0, 'no section headers: stripped');
      assert.equal(execFileSync(binary, { encoding: 'utf8' }), t.inputs[src], 'running it prints the table');
      assert.deepEqual(parseDimBRows(t.spec, execFileSync(binary, { encoding: 'utf8' })).map((r) => r.id), t.draw.world.dimB.map((r) => r.id));
      const progress = JSON.parse(t.taskFiles['tests/progress.json']);
      assert.ok(progress.inputs.files['bin/routectl']);
      assert.equal(t.labels.artifactRoles['data/bin/routectl'], 'input:dimension(stripped-binary)');
      assert.match(t.instruction, /stripped x86-64 executable/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a workload-weighted critical path as the horizon, per task', () => {
    const small = compileWorkflow('small', ['missing-records'], { partitions: 5, facts: 60, dimA: 8, dimB: 6 });
    const big = compileWorkflow('full', ['missing-records'], { partitions: 10, facts: 900, dimA: 20, dimB: 10 });
    assert.equal(small.horizon, small.criticalPath.length);
    assert.ok(big.horizonWorkload > small.horizonWorkload, 'more records, more estimated actions');
    assert.equal(big.stages.find((s) => s.id === 'parse-shards')!.workload, 1 + Math.floor(900 / 200));
    assert.equal(big.horizonWorkload, big.criticalPath.reduce((s, id) => s + big.stages.find((x) => x.id === id)!.workload, 0));
    assert.ok(big.width >= 2);
    const t = synthesize({ domain: 'math-or', tier: 'full', seed: 4 });
    assert.equal(t.labels.horizonWorkload, t.workflow.horizonWorkload);
    assert.equal(Object.keys(t.labels.stageWorkload).length, t.workflow.stages.length);
  });
});

describe('coverage labels and the corpus table', () => {
  it('labels every task on the 19 axes and tabulates a mix', () => {
    assert.equal(COVERAGE_AXES.length, 19);
    const tasks = Object.keys(DOMAINS).map((domain, i) => synthesize({ domain, tier: 'small', seed: 10 + i }));
    for (const t of tasks) for (const axis of COVERAGE_AXES) assert.ok(t.labels[axis] !== undefined, `${t.id} lacks ${axis}`);
    const table = coverageTable(tasks.map((t) => t.labels));
    assert.equal(table.find((r) => r.axis === 'field')!.distinct, 7);
    assert.equal(table.find((r) => r.axis === 'scale')!.values.small, 7);
    const text = formatCoverageTable(table, tasks.length);
    assert.match(text, /coverage of 7 task\(s\) on 19 axes/);
    assert.match(text, /quantum computing ×1/);
  });

  it('filters tasks by label or name', () => {
    const q = synthesize({ domain: 'quantum', tier: 'unit', seed: 1, faultCount: 6 });
    assert.equal(labelsMatch(q.labels, 'field=quantum'), true);
    assert.equal(labelsMatch(q.labels, 'field=forensics'), false);
    assert.equal(labelsMatch(q.labels, 'faultClasses=stale-cache'), true);
    assert.equal(taskMatchesFilter('tev-quantum-unit-s1', q.labels, 'scale=unit artifactFormats=safetensors'), true);
    assert.equal(taskMatchesFilter('tev-quantum-unit-s1', q.labels, 'scale=full'), false);
    assert.equal(taskMatchesFilter('hello-world', undefined, 'hello'), true);
    assert.equal(taskMatchesFilter('hello-world', undefined, 'field=quantum'), false);
  });

  it('`tbrl synth --domain all --dry-run` prints the coverage table of the mix and writes no task', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tbrl-synth-mix-'));
    const lines: string[] = [];
    const log = console.log;
    console.log = (...a: unknown[]) => lines.push(a.join(' '));
    try {
      const code = await synthCommand.run({ positionals: [out], values: { domain: 'all', tier: 'small', seed: '1', count: '14', format: 'tb', 'dry-run': true } });
      assert.equal(code, 0, lines.join('\n'));
      const text = lines.join('\n');
      assert.match(text, /coverage of 14 task\(s\) on 19 axes/);
      assert.match(text, /field\s+7 distinct/);
      const report = JSON.parse(readFileSync(join(out, 'synth-report.json'), 'utf8'));
      assert.equal(report.tasks.length, 14);
      assert.deepEqual([...new Set(report.tasks.map((t: { labels: { domain: string } }) => t.labels.domain))].sort(), Object.keys(DOMAINS).sort());
      assert.equal(existsSync(join(out, report.tasks[0].task)), false, 'a dry run writes no task');
    } finally {
      console.log = log;
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('decontamination', () => {
  const prompt = (text: string, id: string) => ({ id, text });
  it('counts 13-gram and 8-gram overlap, the nearest-prompt Jaccard, and flags overlapping pairs', () => {
    const bench = [prompt('Write a script that reads the nginx access log and prints the ten most frequent client addresses sorted by count', 'tb-nginx'), prompt('Compile the C program in /app and fix the segmentation fault', 'tb-segfault')];
    const clean = decontaminate([prompt(synthesize({ domain: 'quantum', tier: 'unit', seed: 1 }).instruction, 'tev-q')], bench);
    assert.equal(clean.flagged.length, 0);
    assert.equal(clean.overlap13, 0);
    assert.ok(clean.jaccard.max < 0.3, `${clean.jaccard.max}`);
    const copied = decontaminate([prompt('Task: write a script that reads the nginx access log and prints the ten most frequent client addresses sorted by count, then exit', 'tev-copy'), prompt('Compile the C program and fix it', 'tev-near')], bench);
    assert.deepEqual(copied.flagged.map((p) => [p.corpus, p.benchmark]), [['tev-copy', 'tb-nginx']]);
    assert.ok(copied.flagged[0].shared13 >= 1 && copied.flagged[0].shared8 > copied.flagged[0].shared13);
    assert.equal(copied.overlap13, 0.5);
    assert.equal(copied.nearest.find((n) => n.corpus === 'tev-near')!.benchmark, 'tb-segfault');
    assert.equal(copied.jaccard.histogram.reduce((s, x) => s + x, 0), 2);
    assert.equal(ngrams(tokens('a b c d'), 3).size, 2);
  });

  it('`tbrl synth decontam` exits 1 and names the pair when a corpus overlaps', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tbrl-decontam-'));
    const lines: string[] = [];
    const log = console.log;
    console.log = (...a: unknown[]) => lines.push(a.join(' '));
    try {
      await writeSynthesizedTask(synthesize({ domain: 'math-or', tier: 'unit', seed: 2 }), join(root, 'corpus', 'a'), 'terminal-bench');
      await writeSynthesizedTask(synthesize({ domain: 'math-or', tier: 'unit', seed: 3 }), join(root, 'bench', 'b'), 'harbor');
      const code = await synthCommand.run({ positionals: ['decontam', join(root, 'corpus')], values: { against: join(root, 'bench') } });
      assert.equal(code, 1, 'two tasks of one template share 13-grams');
      assert.match(lines.join('\n'), /CONTAMINATED: 1 pair\(s\).*\n\s+a ~ b: \d+ shared 13-gram/);
      lines.length = 0;
      const none = await synthCommand.run({ positionals: ['decontam', join(root, 'corpus')], values: { against: 'examples' } });
      assert.equal(none, 0, lines.join('\n'));
      assert.match(lines.join('\n'), /no pair shares a 13-gram/);
    } finally {
      console.log = log;
      rmSync(root, { recursive: true, force: true });
    }
  });
});
