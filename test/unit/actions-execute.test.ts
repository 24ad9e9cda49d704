/**
 * executeTurn for the actions that never touch the container (todo, scratchpad, finish) and for
 * parse errors. The sandbox here refuses every call, which proves these paths do not use it;
 * everything that does use it is tested against real containers in test/integration.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseTurn } from '../../src/core/actions/parser';
import { executeTurn, PARSE_ERROR_KIND, isFatalSandboxError } from '../../src/core/actions/execute';
import type { ActionContext, AgentState } from '../../src/core/actions/types';
import type { Sandbox } from '../../src/core/sandbox/types';

const untouchable = new Proxy({}, {
  get(_t, prop) {
    if (prop === 'then') return undefined;
    throw new Error(`the sandbox was used (${String(prop)})`);
  },
}) as Sandbox;

function ctx(state?: Partial<AgentState>, maxObservationBytes = 8192): ActionContext {
  return { sandbox: untouchable, state: { todos: [], nextTodoId: 1, scratchpad: [], ...state }, trace: false, maxObservationBytes, defaultTimeoutMs: 1000 };
}
const run = (text: string, c: ActionContext) => executeTurn(parseTurn(text), c);

describe('todo', () => {
  test('add, complete, delete, view; ids are never reused', async () => {
    const c = ctx();
    await run('<todo>\noperations:\n  - action: add\n    content: a\n  - action: add\n    content: b\n  - action: delete\n    task_id: 2\n  - action: add\n    content: c\n</todo>', c);
    assert.deepEqual(c.state.todos, [{ id: 1, content: 'a', done: false }, { id: 3, content: 'c', done: false }]);
    const r = await run('<todo>\noperations:\n  - action: complete\n    task_id: 3\n  - action: view_all\n</todo>', c);
    const rec = r.results[0]!.record;
    assert.equal(rec.kind, 'todo');
    assert.equal(rec.ok, true);
    assert.equal(rec.observation, '<todo_output>\nCompleted task 3: c\nTodo list (1/2 done):\n[ ] 1. a\n[x] 3. c\n</todo_output>');
  });

  test('an unknown id is an error in the output, the other operations still apply', async () => {
    const c = ctx();
    const r = await run('<todo>\noperations:\n  - action: complete\n    task_id: 7\n  - action: add\n    content: x\n</todo>', c);
    assert.equal(r.results[0]!.record.ok, false);
    assert.match(r.results[0]!.record.observation, /Error: no task 7 to complete \(existing ids: none\)\nAdded task 1: x/);
    assert.equal(c.state.todos.length, 1);
  });
});

describe('scratchpad', () => {
  test('notes accumulate and are listed', async () => {
    const c = ctx();
    assert.match((await run('<scratchpad>\naction: view_all_notes\n</scratchpad>', c)).results[0]!.record.observation, /No notes yet/);
    await run('<scratchpad>\naction: add_note\ncontent: first\n</scratchpad>\n<scratchpad>\naction: add_note\ncontent: |\n  second\n  line\n</scratchpad>', c);
    assert.deepEqual(c.state.scratchpad, ['first', 'second\nline\n']);
    const r = await run('<scratchpad>\naction: view_all_notes\n</scratchpad>', c);
    assert.equal(r.results[0]!.record.observation, '<scratchpad_output>\nNote 1:\nfirst\n\nNote 2:\nsecond\nline\n\n</scratchpad_output>');
  });
});

describe('executeTurn', () => {
  test('runs in order, errors in place, stops at finish and says what was skipped', async () => {
    const c = ctx();
    const r = await run([
      '<todo>\noperations:\n  - action: add\n    content: one\n</todo>',
      '<todo>\noperations: nope\n</todo>',
      '<finish>\nmessage: all good\n</finish>',
      '<todo>\noperations:\n  - action: add\n    content: never\n</todo>',
      '<bash>\ncmd: never\n</bash>',
    ].join('\n'), c);
    assert.deepEqual(r.results.map((x) => x.record.kind), ['todo', PARSE_ERROR_KIND, 'finish']);
    assert.equal(r.endsEpisode, true);
    assert.equal(r.onlyErrors, false);
    assert.equal(r.results[2]!.endsEpisode, true);
    assert.match(r.results[1]!.record.observation, /^<error>\nYour <todo> action was not run: `operations` must be a list/);
    assert.deepEqual(r.results[1]!.record.input, { code: 'wrong-type', tag: 'todo', excerpt: '<todo>\noperations: nope\n</todo>' });
    assert.equal(r.results[2]!.record.observation, '<finish_output>\nEpisode finished: all good\n</finish_output>\n[2 later items in this turn were not run: the episode ended here]');
    assert.deepEqual(c.state.todos.map((t) => t.content), ['one']);
  });

  test('a turn of only parse errors is flagged; an empty turn is not', async () => {
    const bad = await run('<bash>\ncmd: [x\n</bash>\n<Finish></Finish>', ctx());
    assert.equal(bad.onlyErrors, true);
    assert.equal(bad.results.length, 2);
    assert.ok(bad.results.every((x) => x.record.ok === false && x.record.durationMs === 0));
    const empty = await run('just text', ctx());
    assert.deepEqual(empty, { results: [], endsEpisode: false, onlyErrors: false });
  });

  test('observations stay within maxObservationBytes', async () => {
    const c = ctx(undefined, 300);
    const long = 'x'.repeat(5000);
    const r = await run(`<scratchpad>\naction: add_note\ncontent: ${long}\n</scratchpad>\n<scratchpad>\naction: view_all_notes\n</scratchpad>\n<todo>\noperations:\n  - action: add\n    content: ${long}\nview_all: true\n</todo>\n<bash>\ncmd: ${long}\nbogus: 1\n</bash>`, c);
    assert.equal(r.results.length, 4);
    for (const x of r.results) assert.ok(Buffer.byteLength(x.record.observation) <= 300, `${x.record.kind}: ${Buffer.byteLength(x.record.observation)}`);
    assert.match(r.results[1]!.record.observation, /bytes omitted/);
  });

  test('sandbox-level failures are recognised by code', () => {
    assert.equal(isFatalSandboxError({ code: 'DOCKER_DIED' }), true);
    assert.equal(isFatalSandboxError({ code: 'CONTAINER_GONE' }), true);
    assert.equal(isFatalSandboxError({ code: 'SANDBOX_FILE' }), false);
    assert.equal(isFatalSandboxError(new Error('x')), false);
    assert.equal(isFatalSandboxError(undefined), false);
  });
});
