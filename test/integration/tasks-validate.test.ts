/**
 * `tbrl validate` against real containers: the bundled example is valid (oracle 1, empty agent 0),
 * a task whose tests pass on an untouched container is flagged, a task whose reference solution is
 * wrong is flagged, and a Harbor scaffold validates out of the box. Images build offline from the
 * stand-in base; every container is removed afterwards.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createDockerProvider, LABEL_RUN } from '../../src/core/sandbox/index';
import { scaffoldTask } from '../../src/core/tasks/scaffold';
import { validateTasks, type ValidationProgress } from '../../src/core/tasks/validate';
import { readValidations } from '../../src/core/tasks/validation-record';

const ROOT = resolve(__dirname, '../..');
const EXAMPLE = join(ROOT, 'examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-validate-it-'));
const provider = createDockerProvider();

after(() => rmSync(scratch, { recursive: true, force: true }));

async function validateContainersLeft(): Promise<string[]> {
  const containers = await provider.docker.listContainers({ all: true, filters: { label: [LABEL_RUN] } });
  return containers.filter((c) => c.Labels[LABEL_RUN]?.startsWith('validate-')).map((c) => c.Id);
}

describe('tbrl validate with Docker', () => {
  it('passes the example, flags an empty-agent pass and a wrong oracle, validates a Harbor scaffold', async () => {
    // Tests that hold on any container: the empty agent scores 1.
    const trivial = join(scratch, 'trivial');
    await scaffoldTask(trivial);
    writeFileSync(
      join(trivial, 'tests/test_outputs.py'),
      'from pathlib import Path\n\n\ndef test_greeting_exists():\n    assert Path("/app").is_dir()\n\n\ndef test_greeting_content():\n    assert True\n\n\ndef test_length_matches():\n    assert 1 + 1 == 2\n',
    );
    // A reference solution that does only part of the work: the oracle scores below 1.
    const wrong = join(scratch, 'wrong-oracle');
    await scaffoldTask(wrong);
    writeFileSync(join(wrong, 'solution.sh'), "#!/bin/bash\nprintf 'Hello, world!\\n' > /app/greeting.txt\n");
    const harbor = join(scratch, 'harbor-scaffold');
    await scaffoldTask(harbor, { format: 'harbor' });
    // Oracle from solution.yaml: a `block: false` command (a server that never exits) must not hang.
    const yamlOracle = join(scratch, 'yaml-oracle');
    await scaffoldTask(yamlOracle);
    rmSync(join(yamlOracle, 'solution.sh'));
    writeFileSync(
      join(yamlOracle, 'solution.yaml'),
      [
        '- command: python3 -m http.server 8765 --bind 127.0.0.1',
        '  block: false',
        "- command: printf 'Hello, world!\\n' > /app/greeting.txt",
        '  block: true',
        '- command: printf 13 > /app/length.txt',
        '',
      ].join('\n'),
    );

    // Weights that name a test that does not exist.
    const badWeights = join(scratch, 'bad-weights');
    await scaffoldTask(badWeights);
    writeFileSync(join(badWeights, 'test_weights.json'), '{"test_greeting_exists": 0.5, "test_greeting_colour": 0.5}\n');

    const events: ValidationProgress[] = [];
    const results = await validateTasks([EXAMPLE, trivial, wrong, harbor, yamlOracle, badWeights], { provider, concurrency: 2, onProgress: (e) => events.push(e) });
    const [example, trivialR, wrongR, harborR, yamlR, weightsR] = results;

    assert.equal(example.valid, true, example.problems.join('\n'));
    assert.equal(example.build.status, 'passed');
    assert.equal(example.build.substitutedFrom, 'ghcr.io/laude-institute/t-bench/python-3-13:20250620');
    assert.equal(example.oracle.score, 1);
    assert.equal(example.empty.score, 0);

    assert.equal(trivialR.valid, false);
    assert.equal(trivialR.oracle.status, 'passed');
    assert.equal(trivialR.empty.status, 'failed');
    assert.equal(trivialR.empty.score, 1);
    assert.match(trivialR.problems.join('\n'), /empty agent: an agent that does nothing scores 1/);

    assert.equal(wrongR.valid, false);
    assert.equal(wrongR.oracle.status, 'failed');
    assert.equal(wrongR.oracle.score, 0.7);
    assert.match(wrongR.oracle.message ?? '', /must score 1 \(score 0\.7; not passed: .*test_length_matches/);
    assert.equal(wrongR.empty.status, 'passed');

    assert.equal(harborR.valid, true, harborR.problems.join('\n'));
    assert.equal(harborR.format, 'harbor');
    assert.equal(harborR.oracle.score, 1);
    assert.equal(harborR.empty.score, 0);

    assert.equal(yamlR.valid, true, yamlR.problems.join('\n'));
    assert.equal(yamlR.oracle.score, 1);

    assert.equal(weightsR.valid, false);
    assert.equal(weightsR.static.status, 'failed');
    assert.match(weightsR.problems.join('\n'), /weights: weight 'test_greeting_colour' names no test function/);
    // The weighted test that never runs counts as failed, so even the oracle cannot reach 1.
    assert.equal(weightsR.oracle.status, 'failed');

    // Progress: every task started and finished once, with stage events in between.
    assert.equal(events.filter((e) => e.type === 'done').length, 6);
    const oracleStage = (path: string) => events.find((e) => e.type === 'stage' && e.stage === 'oracle' && e.path === path);
    // The reference solution runs through the agent loop, except where solution.yaml needs non-blocking keys.
    assert.match(JSON.stringify(oracleStage(EXAMPLE)), /oracle policy through the agent loop/);
    assert.match(JSON.stringify(oracleStage(yamlOracle)), /\(script\)/);
    assert.deepEqual(await validateContainersLeft(), []);
  });

  it('CLI: table on stdout, JSON file, exit code 1 when a task is invalid', () => {
    const trivial = join(scratch, 'trivial');
    const json = join(scratch, 'validate.json');
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'validate', EXAMPLE, trivial, '--concurrency', '2', '--json', json, '--record', scratch], { encoding: 'utf8', cwd: ROOT });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    // Columns: task, format, valid, static, tev (`-`: not a Tev task), build, oracle, empty.
    assert.match(r.stdout, /hello-world\s+terminal-bench\s+yes\s+ok\s+-\s+ok\s+ok 1\s+ok 0/);
    assert.match(r.stdout, /trivial\s+terminal-bench\s+NO\s+ok\s+-\s+ok\s+ok 1\s+FAIL 1/);
    assert.match(r.stderr, /\[2\/2\]/);
    const report = JSON.parse(readFileSync(json, 'utf8'));
    assert.equal(report.valid, false);
    assert.deepEqual(report.tasks.map((t: { id: string; valid: boolean }) => [t.id, t.valid]), [['hello-world', true], ['trivial', false]]);
    // The editor's Tasks view reads the last result of each task from the record.
    const recorded = readValidations(scratch).records;
    assert.deepEqual([recorded.get(EXAMPLE)?.valid, recorded.get(trivial)?.valid], [true, false]);
    assert.equal(recorded.get(trivial)?.empty.score, 1);
  });
});
