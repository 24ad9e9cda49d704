/**
 * The ATIF v1.7 export checked by Harbor's own validator (harbor 0.25 from PyPI in .venv/harbor,
 * which scripts/setup.sh creates). Token ids, logprobs and cost on model steps; an oracle run's
 * steps carry llm_call_count 0 and no metrics, as v1.7 requires.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import { toAtif } from '../../src/core/trajectory/export';
import { promptDelta } from '../../src/core/trajectory/tokens';
import type { StepRecord, TrajectoryHeader } from '../../src/core/trajectory/schema';

const PYTHON = resolve('.venv/harbor/bin/python');

function validate(atif: unknown): { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-atif-'));
  try {
    const file = join(dir, 'trajectory.json');
    writeFileSync(file, JSON.stringify(atif, null, 2));
    const r = spawnSync(PYTHON, ['-m', 'harbor.utils.trajectory_validator', file], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const header = (kind: 'model' | 'oracle'): TrajectoryHeader => ({
  type: 'header', schema: 'tbrl.trajectory/1.1', runId: `run-${kind}`, startedAt: '2026-12-02T06:00:00.000Z',
  task: { id: 'hello-world', dir: '/t', format: 'terminal-bench', instruction: 'Count the words.' },
  policy: { kind, ...(kind === 'model' ? { model: 'SmolLM2-135M-Instruct.Q4_1', n: 2 } : {}) }, config: {},
  versions: { tbrl: '0.1.0', node: process.version, promptVersion: 'v1' }, systemPrompt: 'You are an agent.',
});
const step = (index: number, prompt: number[], previous: number[] | undefined): StepRecord => ({
  type: 'step', index, startedAt: `2026-12-02T06:00:0${index + 1}.000Z`, durationMs: 900,
  candidates: [
    { text: '<bash>\ncmd: ls /app\n</bash>', parses: true, tokenIds: [44, 45, 46], logprobs: [-0.1, -0.2, -0.3], finishReason: 'stop', completionTokens: 3 },
    { text: 'I will list the files', parses: false, tokenIds: [50, 51], logprobs: [-1.5, -2], finishReason: 'length', completionTokens: 2 },
  ],
  decision: { mode: 'listwise', chosen: 0, scores: [1, 0], calls: 1, outputTokens: 4, parallelOutputTokens: 4 },
  chosenText: '<bash>\ncmd: ls /app\n</bash>',
  actions: [{ kind: 'bash', input: { cmd: 'ls /app' }, observation: '<bash_output>data</bash_output>', ok: true, exitCode: 0, durationMs: 5 }],
  parseErrors: index === 1 ? ['No action found. Example: <bash>\ncmd: ls\n</bash>'] : [],
  usage: { promptTokens: prompt.length, completionTokens: 5, latencyMs: 800 },
  todos: [], scratchpad: [], prompt: promptDelta(previous, prompt), costUsd: 0,
});

test('Harbor 0.25 validates the ATIF v1.7 export of a model run (token ids, logprobs, cost) and of an oracle run', { timeout: 120_000 }, () => {
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run \`bash scripts/setup.sh\` (it creates .venv/harbor with harbor==0.25 from PyPI).`);
  const p0 = [1, 2, 3, 4];
  const p1 = [1, 2, 3, 4, 44, 45, 46, 9, 10];
  const model = [header('model'), step(0, p0, undefined), step(1, p1, p0), {
    type: 'footer', endedAt: '2026-12-02T06:00:09.000Z', endReason: 'max-steps', steps: 2,
    reward: { tests: 0, weights: { tests: 1, judge: 0 }, total: 0 },
    usage: { promptTokens: 13, completionTokens: 10, verifierCalls: 2, verifierOutputTokens: 8 },
  }].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const atif = toAtif(parseTrajectory(model, 'model'));
  assert.deepEqual(atif.steps[3].metrics?.prompt_token_ids, p1);
  const ok = validate(atif);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /Trajectory is valid/);

  const oracleRun = [header('oracle'), { ...step(0, p0, undefined), prompt: undefined, candidates: [{ text: 'ls', parses: true }], decision: undefined }].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const oracle = validate(toAtif(parseTrajectory(oracleRun, 'oracle')));
  assert.equal(oracle.code, 0, oracle.out);

  // The validator is not a rubber stamp: metrics on a no-LLM step are rejected.
  const broken = toAtif(parseTrajectory(oracleRun, 'oracle'));
  broken.steps[2].metrics = { prompt_tokens: 1 };
  const bad = validate(broken);
  assert.notEqual(bad.code, 0);
  assert.match(bad.out, /llm_call_count is 0/);
});
