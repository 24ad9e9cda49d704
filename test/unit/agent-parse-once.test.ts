/**
 * A candidate is parsed once, by the policy that sampled it; the verifier and the step loop use
 * that parse. Each test hands over a parse that differs from what the text would give, so a
 * component that parsed the text again would behave differently.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTurn } from '../../src/core/actions/parser';
import { runAgentLoop } from '../../src/core/agent/loop';
import { parseAgentTurn } from '../../src/core/agent/turn';
import { createModelPolicy } from '../../src/core/agent/model-policy';
import type { Policy, PolicyTurn } from '../../src/core/agent/policy';
import { MidHarnessVerifier, DEMOTED_SCORE } from '../../src/core/verifier/verifier';
import type { Sandbox } from '../../src/core/sandbox/types';
import type { Task } from '../../src/core/tasks/model';
import type { ChatMessage } from '../../src/core/model/types';
import { startOpenAIServer } from '../helpers/openai-server';

const bash = (cmd: string) => `<bash>\ncmd: ${cmd}\n</bash>`;
const finish = '<finish>\nmessage: done via the parse\n</finish>';
const prose = 'I think the task is done.';
const task = { id: 't', instruction: 'Do it.', agentTimeoutSec: 60 } as Task;
const history: ChatMessage[] = [{ role: 'system', content: 's' }, { role: 'user', content: 'Do it.' }];

function oneTurn(turn: PolicyTurn): Policy {
  return { kind: 'scripted', description: 'one turn', next: async () => turn };
}

test('the loop executes the policy\'s parse of the chosen candidate, and parses the text only when none came with it', async () => {
  // finish needs no container, so a sandbox that is never touched is enough.
  const sandbox = {} as Sandbox;
  const usage = { promptTokens: 0, completionTokens: 0 };
  const withParse = await runAgentLoop({ policy: oneTurn({ candidates: [{ text: prose, parses: true }], parsed: [parseTurn(finish)], chosen: 0, usage }), sandbox, task, systemPrompt: 's', limits: { maxSteps: 1 }, trace: false });
  assert.equal(withParse.endReason, 'finished');
  assert.equal(withParse.endMessage, 'done via the parse');
  assert.equal(withParse.steps[0].chosenText, prose, 'the record keeps the sampled text');
  const without = await runAgentLoop({ policy: oneTurn({ candidates: [{ text: prose, parses: false }], chosen: 0, usage }), sandbox, task, systemPrompt: 's', limits: { maxSteps: 1 }, trace: false });
  // Parsed from its text here, the prose has no action: an error observation, and the run goes on.
  assert.equal(without.endReason, 'max-steps');
  assert.equal(without.steps[0].parseErrors.length, 1);
  assert.match(without.steps[0].parseErrors[0], /no action/);
  // The debugger picking another candidate runs that candidate's parse too.
  const picked = await runAgentLoop({
    policy: oneTurn({ candidates: [{ text: bash('ls'), parses: true }, { text: prose, parses: true }], parsed: [parseTurn(bash('ls')), parseTurn(finish)], chosen: 0, usage }),
    sandbox, task, systemPrompt: 's', limits: { maxSteps: 1 }, trace: false,
    beforeExecute: async () => ({ action: 'replace', text: prose }),
  });
  assert.equal(picked.endReason, 'finished');
  assert.deepEqual(picked.steps[0].human, { action: 'edit', chosen: 0, editedFrom: bash('ls') }, 'recorded as before');
});

test('the verifier pre-filters and compares by the parses it is given', async () => {
  const srv = await startOpenAIServer({ models: ['judge'], respond: () => 'A' });
  try {
    const v = new MidHarnessVerifier({ mode: 'decision-only', endpoint: { baseUrl: srv.baseUrl, model: 'judge', maxRetries: 0 } });
    const candidates = [prose, bash('ls'), bash('pwd')];
    const told = await v.select({ messages: history, candidates, parsed: [parseTurn(bash('cat x')), parseTurn(candidates[1]), parseTurn(candidates[2])] });
    assert.notEqual(told.scores[0], DEMOTED_SCORE, 'a candidate whose given parse holds an action is compared');
    assert.equal(told.chosen, 0);
    const parsedHere = await v.select({ messages: history, candidates });
    assert.equal(parsedHere.scores[0], DEMOTED_SCORE, 'parsed from its text, the prose does not parse');
    assert.equal(parsedHere.chosen, 1);
    // Same parse for two texts: one action, so the second is a duplicate and gets no call of its own.
    const same = await v.select({ messages: history, candidates: [bash('ls'), bash('"ls"'), bash('pwd')], parsed: [parseTurn(bash('ls')), parseTurn(bash('ls')), parseTurn(bash('pwd'))] });
    assert.equal(same.scores[1], same.scores[0]);
  } finally {
    await srv.close();
  }
});

test('the model policy parses each candidate once and hands the parses to the verifier and the loop', async () => {
  const gen = await startOpenAIServer({ models: ['gen'] });
  const ver = await startOpenAIServer({ models: ['judge'], respond: () => 'B' });
  try {
    const texts = ['oops', bash('ls'), bash('pwd')];
    gen.respond = () => texts;
    const policy = createModelPolicy({ baseUrl: gen.baseUrl, model: 'gen' }, { n: 3, verifier: { mode: 'decision-only', endpoint: { baseUrl: ver.baseUrl, model: 'judge' } } });
    const turn = await policy.next({ task, messages: history, step: 0 });
    assert.deepEqual(turn.parsed, texts.map((t) => parseAgentTurn(t)), 'parsed as the loop would: a turn without actions carries the no-action error');
    assert.deepEqual(turn.candidates.map((c) => c.parses), [false, true, true]);
    assert.equal(turn.chosen, 2, 'B among the two viable candidates');
    assert.equal(turn.decision?.scores[0], DEMOTED_SCORE);
  } finally {
    await gen.close();
    await ver.close();
  }
});
