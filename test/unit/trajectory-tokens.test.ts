import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promptDelta, promptTokenIds, formatTokens, tokenIdsHash } from '../../src/core/trajectory/tokens';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import { toAtif } from '../../src/core/trajectory/export';
import { TbrlError } from '../../src/core/errors';
import type { StepRecord, TrajectoryHeader } from '../../src/core/trajectory/schema';

const header = (schema: string, kind: TrajectoryHeader['policy']['kind'] = 'model'): TrajectoryHeader => ({
  type: 'header', schema, runId: 'r', startedAt: '2026-01-01T00:00:00.000Z',
  task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do it' },
  policy: { kind, model: 'm' }, config: {}, versions: { tbrl: '0.1.0', node: 'v20' }, systemPrompt: 'sys',
});
const step = (index: number, prompt: number[] | undefined, previous: number[] | undefined, extra: Partial<StepRecord> = {}): StepRecord => ({
  type: 'step', index, startedAt: '2026-01-01T00:00:01.000Z', durationMs: 1,
  candidates: [{ text: 'a', parses: true, tokenIds: [7, 8], logprobs: [-0.5, -1.25], finishReason: 'stop' }, { text: 'b', parses: false, tokenIds: [9], logprobs: [-3], finishReason: 'length' }],
  decision: { mode: 'listwise', chosen: 1, scores: [0, 1], calls: 1, outputTokens: 3, parallelOutputTokens: 3 },
  chosenText: 'b', actions: [], parseErrors: ['no action'], usage: { promptTokens: prompt?.length ?? 0, completionTokens: 3 }, todos: [], scratchpad: [],
  ...(prompt ? { prompt: promptDelta(previous, prompt) } : {}), costUsd: 0, ...extra,
});

test('prompt ids are stored as deltas and rebuilt exactly, elision included', () => {
  const p0 = [1, 2, 3, 4];
  const p1 = [1, 2, 3, 4, 10, 11]; // the conversation grew
  const p2 = [1, 2, 20, 21, 22]; // older observations were elided: the kept prefix shrinks
  const steps = [step(0, p0, undefined), step(1, p1, p0), step(2, p2, p1, { elided: [3] })];
  assert.deepEqual(steps.map((s) => [s.prompt!.keep, s.prompt!.append]), [[0, p0], [4, [10, 11]], [2, [20, 21, 22]]]);
  assert.deepEqual(promptTokenIds(steps), [p0, p1, p2]);
  // A step without ids breaks the chain; the next one starts from scratch.
  const gap = [step(0, p0, undefined), step(1, undefined, undefined), step(2, p1, undefined)];
  assert.deepEqual(promptTokenIds(gap), [p0, undefined, p1]);
});

test('a tampered delta is caught by the hash, never turned into wrong training data', () => {
  const steps = [step(0, [1, 2, 3], undefined), step(1, [1, 2, 3, 4], [1, 2, 3])];
  steps[1].prompt!.append = [5];
  assert.throws(() => promptTokenIds(steps), (e: unknown) => e instanceof TbrlError && e.code === 'trajectory-tokens' && /hash/.test(e.message));
  steps[1].prompt = { tokens: 9, keep: 9, append: [], sha256: tokenIdsHash([]) };
  assert.throws(() => promptTokenIds(steps), /keeps 9 prompt tokens/);
  // The ATIF export leaves the ids out rather than exporting a wrong prompt.
  const text = [header('tbrl.trajectory/1.1'), ...steps].map((l) => JSON.stringify(l)).join('\n') + '\n';
  assert.equal(toAtif(parseTrajectory(text, 't')).steps[2].metrics?.prompt_token_ids, undefined);
});

test('a 1.0 trajectory (no token records) still reads and exports; 1.1 exports ATIF v1.7 token metrics of the chosen candidate', () => {
  const old = [header('tbrl.trajectory/1.0'), { ...step(0, undefined, undefined), candidates: [{ text: 'a', parses: true }], costUsd: undefined }].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const t0 = parseTrajectory(old, 'old');
  assert.equal(t0.steps.length, 1);
  const a0 = toAtif(t0);
  assert.equal(a0.schema_version, 'ATIF-v1.7');
  assert.equal(a0.steps[2].metrics?.completion_token_ids, undefined);
  assert.match(formatTokens(t0.steps), /no token ids/);

  const p0 = [1, 2, 3];
  const p1 = [1, 2, 3, 4, 5];
  const text = [header('tbrl.trajectory/1.1'), step(0, p0, undefined), step(1, p1, p0)].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const a = toAtif(parseTrajectory(text, 'new'));
  const agent = a.steps.filter((s) => s.source === 'agent');
  assert.deepEqual(agent[1].metrics?.prompt_token_ids, p1);
  assert.deepEqual(agent[1].metrics?.completion_token_ids, [9], 'the verifier chose candidate 1');
  assert.deepEqual(agent[1].metrics?.logprobs, [-3]);
  assert.equal(agent[1].metrics?.cost_usd, 0);
  assert.equal(agent[1].llm_call_count, 2, 'generator + one verifier call');
  assert.equal(a.final_metrics?.total_cost_usd, 0);
  const shown = formatTokens(parseTrajectory(text, 'new').steps);
  assert.match(shown, /prompt: 5 tokens \(kept 3 of the previous, 2 new\).*✓/);
  assert.match(shown, /\*candidate 1: 1 tokens, finish length, logprob sum -3\.000/);

  // The oracle calls no model: ATIF v1.7 wants llm_call_count 0 and no metrics.
  const oracle = [header('tbrl.trajectory/1.1', 'oracle'), step(0, undefined, undefined)].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const ao = toAtif(parseTrajectory(oracle, 'o')).steps[2];
  assert.equal(ao.llm_call_count, 0);
  assert.equal(ao.metrics, undefined);
});
