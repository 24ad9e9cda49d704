/**
 * The step loop's end conditions and debugger hooks, with a real container (the python stand-in
 * image, no build) and real parsing and execution of the turns.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import type { Sandbox } from '../../src/core/sandbox/types';
import { runAgentLoop, type LoopOptions } from '../../src/core/agent/loop';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import type { Policy } from '../../src/core/agent/policy';
import type { Task } from '../../src/core/tasks/model';
import type { StepRecord } from '../../src/core/trajectory/schema';

const provider = new DockerSandboxProvider();
let sandbox: Sandbox;

const task: Task = {
  id: 'loop-test', dir: '/nonexistent', format: 'terminal-bench', instruction: 'Exercise the loop.', tags: [],
  environment: { image: 'tbrl-standin/python:3' }, agentTimeoutSec: 60, testTimeoutSec: 60, allowInternet: false,
  tests: { runner: '/nonexistent/run-tests.sh', dir: '/nonexistent/tests', kind: 'pytest-summary' }, extra: {},
};

before(async () => {
  sandbox = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `loop-test-${process.pid}` });
});
after(async () => {
  await sandbox?.close();
});

const bash = (cmd: string, extra = '') => `<bash>\ncmd: ${JSON.stringify(cmd)}\n${extra}</bash>`;
const finish = '<finish>\nmessage: done\n</finish>';

function loop(policy: Policy, more: Partial<LoopOptions> = {}) {
  return runAgentLoop({ policy, sandbox, task, systemPrompt: 'system', limits: { maxSteps: 10 }, trace: false, ...more });
}

test('finish ends the run; todos and scratchpad are recorded per step', async () => {
  const steps: StepRecord[] = [];
  const r = await loop(new ScriptedPolicy([
    '<todo>\noperations:\n  - action: add\n    content: "write the file"\n</todo>\n<scratchpad>\naction: add_note\ncontent: "remember"\n</scratchpad>',
    bash('echo hi > /tmp/loop-a && cat /tmp/loop-a'),
    finish,
  ]), { onStep: (s) => { steps.push(s); } });
  assert.equal(r.endReason, 'finished');
  assert.equal(r.steps.length, 3);
  assert.deepEqual(steps.map((s) => s.index), [0, 1, 2], 'every step reached onStep in order');
  assert.equal(r.steps[0].todos.length, 1);
  assert.equal(r.steps[0].todos[0].content, 'write the file');
  assert.deepEqual(r.steps[0].scratchpad, ['remember']);
  assert.equal(r.steps[1].actions[0].exitCode, 0);
  assert.match(r.steps[1].actions[0].observation, /hi/);
  // The conversation: system, task, then assistant/observation pairs.
  assert.deepEqual(r.messages.slice(0, 2).map((m) => m.role), ['system', 'user']);
  assert.equal(r.messages[3].role, 'user');
});

test('a turn with no action is an error observation that quotes it and shows an example; the run goes on', async () => {
  const prose = 'I think the task is done. Let me run ls -la /app to check.';
  const r = await loop(new ScriptedPolicy([prose, '', bash('true'), prose, finish]));
  assert.equal(r.endReason, 'finished', 'no-action turns do not end the run');
  assert.equal(r.steps.length, 5);
  for (const i of [0, 1, 3]) {
    const s = r.steps[i];
    assert.equal(s.actions.length, 1);
    assert.equal(s.actions[0].kind, 'parse_error');
    assert.equal(s.actions[0].input.code, 'no-action');
    assert.equal(s.parseErrors.length, 1);
    assert.match(s.parseErrors[0], /^<error>/);
    assert.match(s.parseErrors[0], /A correct example:\n<bash>\ncmd: /);
  }
  assert.match(r.steps[0].parseErrors[0], /contained no action/);
  assert.match(r.steps[0].parseErrors[0], /You wrote:\nI think the task is done\. Let me run ls -la \/app to check\./);
  assert.match(r.steps[1].parseErrors[0], /Your turn was empty/);
  // The agent reads the error as the next user message, right after its own turn.
  const answer = r.messages.findIndex((m) => m.role === 'assistant' && m.content === prose);
  assert.equal(r.messages[answer + 1].role, 'user');
  assert.match(r.messages[answer + 1].content, /contained no action[\s\S]*A correct example/);
});

test('no-action turns count as error turns: three in a row end the run as repeated-errors', async () => {
  const r = await loop(new ScriptedPolicy(['hello', 'still prose', 'more prose', finish]));
  assert.equal(r.endReason, 'repeated-errors');
  assert.equal(r.steps.length, 3);
});

test('three consecutive turns with only errors end the episode; a good turn in between resets the count', async () => {
  const bad = '<bash>\ncmd: [unclosed\n</bash>';
  const r = await loop(new ScriptedPolicy([bad, bad, bash('true'), bad, bad, bad, finish]));
  assert.equal(r.endReason, 'repeated-errors');
  assert.equal(r.steps.length, 6);
  assert.ok(r.steps[5].parseErrors.length > 0);
});

test('end_after_cmd_success ends the episode when the command succeeds', async () => {
  const r = await loop(new ScriptedPolicy([bash('false', 'end_after_cmd_success: true\n'), bash('true', 'end_after_cmd_success: true\n'), finish]));
  assert.equal(r.endReason, 'finished');
  assert.equal(r.steps.length, 2);
});

test('limits: max steps, max tokens and max time each end the run with a stated reason', async () => {
  const forever = new ScriptedPolicy(Array.from({ length: 20 }, () => bash('true')));
  const steps = await loop(forever, { limits: { maxSteps: 2 } });
  assert.equal(steps.endReason, 'max-steps');
  assert.equal(steps.steps.length, 2);
  assert.match(steps.endMessage ?? '', /step limit \(2\)/);

  const costly: Policy = { kind: 'scripted', description: 'costly', next: async () => ({ candidates: [{ text: bash('true'), parses: true }], chosen: 0, usage: { promptTokens: 600, completionTokens: 100 } }) };
  const tokens = await loop(costly, { limits: { maxSteps: 10, maxTokens: 1500 } });
  assert.equal(tokens.endReason, 'max-tokens');
  assert.equal(tokens.steps.length, 3, '700 + 700 < 1500, the third step crosses the limit and the fourth never starts');

  const slow = await loop(new ScriptedPolicy(Array.from({ length: 5 }, () => bash('sleep 1'))), { limits: { maxSteps: 10, maxTimeMs: 1500 } });
  assert.equal(slow.endReason, 'max-time');
  assert.ok(slow.steps.length >= 1 && slow.steps.length <= 2, `ran ${slow.steps.length} steps`);

  // A policy that hangs is cut off at the deadline through its AbortSignal.
  const hanging: Policy = { kind: 'scripted', description: 'hangs', next: (ctx) => new Promise((_res, rej) => ctx.signal?.addEventListener('abort', () => rej(new Error('aborted')))) };
  const started = Date.now();
  const hung = await loop(hanging, { limits: { maxSteps: 10, maxTimeMs: 300 } });
  assert.equal(hung.endReason, 'max-time');
  assert.ok(Date.now() - started < 5000);
});

test('beforeExecute can replace a turn (recorded as a human edit) and stop the run before a step', async () => {
  const seen: string[] = [];
  const r = await loop(new ScriptedPolicy([bash('echo original'), bash('echo second'), finish]), {
    beforeExecute: async (step, turn) => {
      seen.push(turn.text);
      if (step === 0) return { action: 'replace', text: bash('echo edited') };
      return { action: 'stop' };
    },
  });
  assert.equal(r.endReason, 'cancelled');
  assert.equal(r.steps.length, 1);
  assert.match(r.steps[0].actions[0].observation, /edited/);
  assert.doesNotMatch(r.steps[0].actions[0].observation, /original/);
  assert.deepEqual(r.steps[0].human, { action: 'edit', chosen: 0, editedFrom: bash('echo original') });
  assert.equal(r.steps[0].chosenText, bash('echo edited'));
  assert.equal(seen.length, 2);
});

test('an abort signal ends the run as interrupted between steps', async () => {
  const controller = new AbortController();
  const r = await loop(new ScriptedPolicy(Array.from({ length: 5 }, () => bash('true'))), {
    signal: controller.signal,
    onStep: (s) => {
      if (s.index === 1) controller.abort('interrupted');
    },
  });
  assert.equal(r.endReason, 'interrupted');
  assert.equal(r.steps.length, 2);
});

test('checkpoint per step commits the container and records the image', async () => {
  const r = await loop(new ScriptedPolicy([bash('echo cp > /tmp/cp'), finish]), { checkpoint: true });
  try {
    assert.equal(r.endReason, 'finished');
    assert.ok(r.steps[0].checkpoint, 'step 0 has a checkpoint image');
    const img = await provider.docker.getImage(r.steps[0].checkpoint!).inspect();
    assert.ok(img.Id);
  } finally {
    for (const s of r.steps) if (s.checkpoint) await provider.docker.getImage(s.checkpoint).remove({ force: true }).catch(() => undefined);
  }
});
