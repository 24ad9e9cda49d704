import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSystemPrompt, SYSTEM_PROMPT_VERSION, initialMessages } from '../../src/core/agent/prompt';
import { parseTurn } from '../../src/core/actions/parser';
import { ACTION_KINDS } from '../../src/core/actions/schema';
import type { Task } from '../../src/core/tasks/model';

const prompt = loadSystemPrompt();
const examples = [...prompt.text.matchAll(/```\n(<(\w+)>[\s\S]*?<\/\2>)\n```/g)].map((m) => m[1]);

test('every action example in the system prompt parses, with no error', () => {
  assert.ok(examples.length >= 10, `found ${examples.length} examples`);
  for (const ex of examples) {
    const turn = parseTurn(ex);
    const errors = turn.items.filter((i) => !i.ok);
    assert.deepEqual(errors, [], `example does not parse:\n${ex}`);
    assert.equal(turn.items.length, 1, ex);
  }
});

test('the system prompt teaches every action kind the parser accepts, except the view-all variants it names in prose', () => {
  const taught = new Set(examples.flatMap((ex) => parseTurn(ex).items.flatMap((i) => (i.ok ? [i.action.kind] : []))));
  const missing = ACTION_KINDS.filter((k) => !taught.has(k) && !prompt.text.includes(k.split('.').pop()!));
  assert.deepEqual(missing, []);
});

test('the system prompt states the five phases, mandatory todos and read-only exploration', () => {
  for (const phrase of ['Planning', 'Exploration (read-only)', 'Plan refinement', 'Execution', 'Verification', 'mandatory']) {
    assert.ok(prompt.text.includes(phrase), phrase);
  }
  assert.equal(prompt.version, SYSTEM_PROMPT_VERSION);
});

test('the first messages are the system prompt and the task statement', () => {
  const task = { instruction: 'Do the thing.\n', agentTimeoutSec: 600 } as Task;
  const [system, user] = initialMessages(prompt.text, task);
  assert.equal(system.role, 'system');
  assert.equal(system.content, prompt.text);
  assert.match(user.content, /<task>\nDo the thing\.\n<\/task>/);
  assert.match(user.content, /about 10 minute/);
});
