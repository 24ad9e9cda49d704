import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAIServer } from '../helpers/openai-server';
import { MidHarnessVerifier } from '../../src/core/verifier/verifier';
import { appendLabels, historyFromMessages, humanLabels, verifierLabels, LABEL_SCHEMA, type PreferenceLabel } from '../../src/core/verifier/labels';
import { TrajectoryWriter } from '../../src/core/trajectory/writer';
import { TRAJECTORY_SCHEMA, type StepRecord } from '../../src/core/trajectory/schema';
import { exportLabelsCommand } from '../../src/cli/commands/export-labels';
import type { ChatMessage } from '../../src/core/model/types';

const bash = (cmd: string) => `<think>why ${cmd}</think>\n<bash>\ncmd: ${cmd}\n</bash>`;
const messages: ChatMessage[] = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'Fix the build.' },
  { role: 'assistant', content: bash('make') },
  { role: 'user', content: '<bash_output>\nexit_code: 2\nmissing header foo.h\n</bash_output>' },
];
const readJsonl = (p: string) => readFileSync(p, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as PreferenceLabel);

test('human pick/accept/edit → chosen vs each distinct rejected, reasoning stripped', () => {
  const { instruction, history } = historyFromMessages(messages);
  assert.equal(instruction, 'Fix the build.');
  assert.deepEqual(history, [{ action: '<bash>\ncmd: make\n</bash>', observation: messages[3].content }]);
  const ctx = { instruction, history, candidates: [bash('ls'), bash('cat foo.h'), bash('cat  foo.h'), bash('apt-get install foo')], step: 1 };

  const pick = humanLabels(ctx, { action: 'pick', chosen: 3 });
  assert.deepEqual(pick.map((l) => l.rejectedIndex), [0, 1], 'identical candidates are one rejection');
  assert.ok(pick.every((l) => l.chosenIndex === 3 && l.source === 'human' && l.schema === LABEL_SCHEMA));
  assert.ok(pick.every((l) => !l.chosen.includes('<think>') && !l.rejected.includes('<think>')));
  assert.equal(pick[0].history[0].observation, messages[3].content);

  const accept = humanLabels(ctx, { action: 'accept', chosen: 1 });
  assert.deepEqual(accept.map((l) => l.rejectedIndex), [0, 3]);

  const edited = '<bash>\ncmd: touch foo.h && make\n</bash>';
  const edit = humanLabels(ctx, { action: 'edit', chosen: 1, editedText: edited });
  assert.deepEqual(edit.map((l) => l.rejectedIndex), [0, 1, 3], 'the edited original is rejected too');
  assert.ok(edit.every((l) => l.chosen === edited && l.chosenIndex === 'edited' && l.human?.editedFrom === 1));
});

test('labels are written on a human override of the verifier, with the verifier\'s own pairwise judgements', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-labels-'));
  const srv = await startOpenAIServer({
    // The verifier prefers whichever candidate is shown as A.
    respond: () => 'WINNER: A\nMARGIN: 3',
  });
  try {
    const v = new MidHarnessVerifier({ mode: 'pairwise', endpoint: { baseUrl: srv.baseUrl, model: 'j', maxRetries: 0 } });
    const candidates = [bash('ls'), bash('cat foo.h'), bash('apt-get install foo')];
    const decision = await v.select({ messages, candidates });
    assert.equal(decision.calls, 3);
    const human = (decision.chosen + 1) % 3; // the user overrides the verifier
    const { instruction, history } = historyFromMessages(messages);
    const ctx = { instruction, history, candidates, step: 1, runId: 'r1' };
    const out = join(dir, 'sub', 'labels.jsonl');
    await appendLabels(out, [...humanLabels(ctx, { action: 'pick', chosen: human }), ...verifierLabels(ctx, decision)]);
    const rows = readJsonl(out);
    const humans = rows.filter((r) => r.source === 'human');
    const judged = rows.filter((r) => r.source === 'verifier');
    assert.equal(humans.length, 2);
    assert.ok(humans.every((r) => r.chosenIndex === human && r.runId === 'r1'));
    assert.equal(judged.length, 3, 'one per judged pair');
    for (const r of judged) {
      const c = r.chosenIndex as number;
      assert.ok(decision.matrix![c][r.rejectedIndex] > decision.matrix![r.rejectedIndex][c]);
      assert.ok(Math.abs((r.verifier?.margin ?? 0) - 1) < 1e-12, 'margin 3 = a full win');
    }
  } finally {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tbrl export-labels reads human steps from trajectories and writes JSONL', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-labels-'));
  try {
    const path = join(dir, 'run', 'trajectory.jsonl');
    const w = TrajectoryWriter.create(path, {
      type: 'header', schema: TRAJECTORY_SCHEMA, runId: 'run-7', startedAt: new Date(0).toISOString(),
      task: { id: 'fix-build', dir: '/tasks/fix-build', format: 'terminal-bench', instruction: 'Fix the build.' },
      policy: { kind: 'model', model: 'gen', n: 3 }, config: {}, versions: { tbrl: '0.1.0', node: process.version },
    });
    const step = (index: number, extra: Partial<StepRecord>): StepRecord => ({
      type: 'step', index, startedAt: new Date(0).toISOString(), durationMs: 1, candidates: [], chosenText: '', actions: [], parseErrors: [],
      usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [], ...extra,
    });
    w.appendStep(step(0, {
      candidates: [{ text: bash('make'), parses: true }],
      chosenText: bash('make'),
      actions: [{ kind: 'bash', input: { cmd: 'make' }, observation: '<bash_output>\nexit_code: 2\nmissing foo.h\n</bash_output>', ok: false, durationMs: 5 }],
    }));
    w.appendStep(step(1, {
      candidates: [{ text: bash('ls'), parses: true }, { text: bash('cat foo.h'), parses: true }, { text: bash('touch foo.h'), parses: true }],
      decision: { mode: 'pairwise', chosen: 0, scores: [1, 0.5, 0], calls: 3, outputTokens: 30, parallelOutputTokens: 10,
        matrix: [[0, 1, 1], [0, 0, 0.5], [0, 0.5, 0]] },
      chosenText: '<bash>\ncmd: touch foo.h && make\n</bash>',
      human: { action: 'edit', chosen: 2, editedFrom: bash('touch foo.h') },
    }));
    w.close();

    const out = join(dir, 'labels.jsonl');
    const logs: string[] = [];
    const orig = console.log;
    console.log = (s: string) => logs.push(s);
    let code: number;
    try {
      code = await exportLabelsCommand.run({ positionals: [join(dir, 'run')], values: { out } });
    } finally {
      console.log = orig;
    }
    assert.equal(code, 0);
    const rows = readJsonl(out);
    const humans = rows.filter((r) => r.source === 'human');
    assert.equal(humans.length, 3);
    assert.ok(humans.every((r) => r.chosen === '<bash>\ncmd: touch foo.h && make\n</bash>' && r.step === 1 && r.taskId === 'fix-build'));
    assert.deepEqual(humans[0].history, [{ action: '<bash>\ncmd: make\n</bash>', observation: '<bash_output>\nexit_code: 2\nmissing foo.h\n</bash_output>' }]);
    // 0 beat 1 and 2; 1 vs 2 was a tie and yields no label.
    assert.deepEqual(rows.filter((r) => r.source === 'verifier').map((r) => [r.chosenIndex, r.rejectedIndex]), [[0, 1], [0, 2]]);
    assert.match(logs.join('\n'), /5 labels \(3 from human choices, 2 verifier judgements\)/);

    const humanOnly = join(dir, 'h.jsonl');
    console.log = () => {};
    try {
      await exportLabelsCommand.run({ positionals: [path], values: { out: humanOnly, 'human-only': true } });
    } finally {
      console.log = orig;
    }
    assert.equal(readJsonl(humanOnly).length, 3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
