import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseTurn } from '../../src/core/actions/parser';
import { formatParseError } from '../../src/core/actions/errors';
import { ACTION_EXAMPLES } from '../../src/core/actions/examples';
import { ACTION_KINDS } from '../../src/core/actions/schema';
import type { ActionParseError, ParsedAction } from '../../src/core/actions/types';

function actions(text: string): ParsedAction[] {
  return parseTurn(text).items.flatMap((i) => (i.ok ? [i.action] : []));
}
function errors(text: string): ActionParseError[] {
  return parseTurn(text).items.flatMap((i) => (i.ok ? [] : [i.error]));
}
function onlyError(text: string): ActionParseError {
  const items = parseTurn(text).items;
  assert.equal(items.length, 1, `expected one item, got ${JSON.stringify(items, null, 1)}`);
  assert.equal(items[0]!.ok, false, 'expected an error');
  return (items[0] as { ok: false; error: ActionParseError }).error;
}
function assertHelpful(err: ActionParseError, code: string, ...mentions: string[]) {
  assert.equal(err.code, code, err.message);
  assert.ok(err.example && err.message.includes(err.example), 'message carries the example');
  for (const m of mentions) assert.ok(err.message.includes(m) || err.excerpt.includes(m), `expected "${m}" in:\n${err.message}\n--\n${err.excerpt}`);
}

describe('valid actions', () => {
  test('every example parses to its own kind with no error', () => {
    for (const [kind, example] of Object.entries(ACTION_EXAMPLES)) {
      const turn = parseTurn(example);
      assert.equal(turn.items.length, 1, kind);
      assert.ok(turn.items[0]!.ok, `${kind}: ${JSON.stringify(turn.items[0])}`);
      assert.equal((turn.items[0] as { action: ParsedAction }).action.kind, kind);
    }
    assert.deepEqual([...ACTION_KINDS].sort(), Object.keys(ACTION_EXAMPLES).sort());
  });

  test('bash: defaults filled, fields typed', () => {
    const [a] = actions('<bash>\ncmd: echo hi\n</bash>');
    assert.deepEqual(a!.body, { cmd: 'echo hi', block: true, end_after_cmd_success: false });
    const [b] = actions('<bash>\ncmd: sleep 100\nblock: false\ntimeout_secs: 2.5\nend_after_cmd_success: true\n</bash>');
    assert.deepEqual(b!.body, { cmd: 'sleep 100', block: false, timeout_secs: 2.5, end_after_cmd_success: true });
    assert.equal(b!.tag, 'bash');
    assert.equal(b!.raw, '<bash>\ncmd: sleep 100\nblock: false\ntimeout_secs: 2.5\nend_after_cmd_success: true\n</bash>');
  });

  test('todo: operations normalised; view_all alone is allowed', () => {
    const [a] = actions('<todo>\noperations:\n  - action: add\n    content: one\n  - action: complete\n    task_id: 1\n  - action: view_all\n</todo>');
    assert.deepEqual(a!.body, { operations: [{ action: 'add', content: 'one' }, { action: 'complete', task_id: 1 }, { action: 'view_all' }], view_all: false });
    const [b] = actions('<todo>\nview_all: true\n</todo>');
    assert.deepEqual(b!.body, { operations: [], view_all: true });
  });

  test('file actions', () => {
    assert.deepEqual(actions('<file>\naction: read\nfile_path: /a\noffset: 3\nlimit: 2\n</file>')[0]!.body, { action: 'read', file_path: '/a', offset: 3, limit: 2 });
    assert.deepEqual(actions('<file>\naction: write\nfile_path: /a\ncontent: ""\n</file>')[0]!.body, { action: 'write', file_path: '/a', content: '' });
    const edit = actions('<file>\naction: edit\nfile_path: /a\nold_string: |\n  a\n  b\nnew_string: c\nreplace_all: true\n</file>')[0]!;
    assert.equal(edit.kind, 'file.edit');
    assert.deepEqual(edit.body, { action: 'edit', file_path: '/a', old_string: 'a\nb\n', new_string: 'c', replace_all: true });
    const me = actions('<file>\naction: multi_edit\nfile_path: /a\nedits:\n  - old_string: x\n    new_string: y\n  - old_string: p\n    new_string: ""\n    replace_all: true\n</file>')[0]!;
    assert.deepEqual(me.body.edits, [{ old_string: 'x', new_string: 'y', replace_all: false }, { old_string: 'p', new_string: '', replace_all: true }]);
    assert.deepEqual(actions('<file>\naction: metadata\nfile_paths: [/a, /b]\n</file>')[0]!.body, { action: 'metadata', file_paths: ['/a', '/b'] });
  });

  test('search and scratchpad actions', () => {
    assert.deepEqual(actions('<search>\naction: grep\npattern: "foo.*"\ninclude: "*.py"\n</search>')[0]!.body, { action: 'grep', pattern: 'foo.*', include: '*.py' });
    assert.deepEqual(actions('<search>\naction: glob\npattern: "**/*.ts"\npath: /src\n</search>')[0]!.body, { action: 'glob', pattern: '**/*.ts', path: '/src' });
    assert.deepEqual(actions('<search>\naction: ls\npath: /app\n</search>')[0]!.body, { action: 'ls', path: '/app', ignore: [] });
    assert.equal(actions('<scratchpad>\naction: add_note\ncontent: remember\n</scratchpad>')[0]!.kind, 'scratchpad.add_note');
    assert.equal(actions('<scratchpad>\naction: view_all_notes\n</scratchpad>')[0]!.kind, 'scratchpad.view_all_notes');
  });

  test('finish: empty, self-closing, plain text and message forms', () => {
    assert.deepEqual(actions('<finish></finish>')[0]!.body, { message: 'Task completed' });
    assert.deepEqual(actions('<finish/>')[0]!.body, { message: 'Task completed' });
    assert.deepEqual(actions('<finish>All tests pass</finish>')[0]!.body, { message: 'All tests pass' });
    assert.deepEqual(actions('<finish>\nmessage: done\n</finish>')[0]!.body, { message: 'done' });
  });

  test('several actions keep their order, prose between them is ignored', () => {
    const t = 'First look around.\n<bash>\ncmd: ls\n</bash>\nthen read\n<file>\naction: read\nfile_path: /x\n</file>\n<finish>\nmessage: ok\n</finish>';
    assert.deepEqual(actions(t).map((a) => a.kind), ['bash', 'file.read', 'finish']);
  });

  test('indented bodies and code fences inside a tag are accepted', () => {
    assert.equal(actions('<bash>\n    cmd: ls\n    block: false\n</bash>')[0]!.body.block, false);
    assert.equal(actions('<bash>\n```yaml\ncmd: ls\n```\n</bash>')[0]!.body.cmd, 'ls');
    assert.equal(actions('```xml\n<bash>\ncmd: pwd\n</bash>\n```')[0]!.body.cmd, 'pwd');
  });
});

describe('think blocks', () => {
  test('actions inside <think> are not run', () => {
    const t = '<think>I could <bash>\ncmd: rm -rf /\n</bash> but no</think>\n<bash>\ncmd: ls\n</bash>';
    assert.deepEqual(actions(t).map((a) => a.body.cmd), ['ls']);
    assert.equal(errors(t).length, 0);
  });
  test('a leading orphan </think> hides everything before it', () => {
    const t = 'reasoning <bash>\ncmd: bad\n</bash></think>\n<bash>\ncmd: good\n</bash>';
    assert.deepEqual(actions(t).map((a) => a.body.cmd), ['good']);
  });
  test('an unclosed <think> does not swallow the turn', () => {
    assert.deepEqual(actions('<think>hmm\n<bash>\ncmd: ls\n</bash>').map((a) => a.body.cmd), ['ls']);
  });
  test('tags in inline code are prose', () => {
    const t = 'I will use `<bash>` and then `<finish>`:\n<bash>\ncmd: ls\n</bash>';
    assert.deepEqual(parseTurn(t).items.map((i) => (i.ok ? i.action.kind : i.error.code)), ['bash']);
  });
  test('a turn with no tags has no items', () => {
    assert.deepEqual(parseTurn('I am done thinking.').items, []);
    assert.deepEqual(parseTurn('').items, []);
  });
});

describe('errors, one per kind', () => {
  test('YAML syntax: line and column, the line quoted with a caret, a hint', () => {
    const e = onlyError('<bash>\ncmd: ls\ncmd2: grep -n foo: bar\n</bash>');
    assertHelpful(e, 'yaml-syntax', 'line 2, column 7', 'grep -n foo: bar', 'must be quoted');
    assert.match(e.excerpt, /2 \| cmd2: grep -n foo: bar\n {2}\| {7}\^/);
  });
  test('YAML: unclosed quote', () => {
    assertHelpful(onlyError('<bash>\ncmd: "echo hi\n</bash>'), 'yaml-syntax', 'line 1', 'quoted string was not closed');
  });
  test('YAML: duplicate key', () => {
    assertHelpful(onlyError('<bash>\ncmd: ls\ncmd: pwd\n</bash>'), 'yaml-syntax', 'line 2', 'only once');
  });
  test('body is not a mapping', () => {
    assertHelpful(onlyError('<bash>ls -la</bash>'), 'not-a-mapping', 'a string ("ls -la")', 'cmd: ...');
    assertHelpful(onlyError('<file>\n- a\n- b\n</file>'), 'not-a-mapping', 'a list of 2 items');
  });
  test('empty body', () => {
    assertHelpful(onlyError('<bash>\n\n</bash>'), 'empty-body', 'empty');
    assertHelpful(onlyError('<search/>'), 'empty-body', '<search/>');
  });
  test('missing required field', () => {
    const e = onlyError('<file>\naction: edit\nfile_path: /a\nnew_string: x\n</file>');
    assertHelpful(e, 'missing-field', 'missing required field `old_string`');
    assert.ok(e.message.includes('action: edit'), 'the example is the edit example');
    assertHelpful(onlyError('<bash>\nblock: true\n</bash>'), 'missing-field', '`cmd`');
    assertHelpful(onlyError('<file>\naction: write\nfile_path: /a\ncontent:\n</file>'), 'missing-field', '`content` is empty');
  });
  test('ill-typed fields', () => {
    assertHelpful(onlyError('<bash>\ncmd: ls\nblock: "no"\n</bash>'), 'wrong-type', '`block` must be true or false', 'a string ("no")');
    assertHelpful(onlyError('<bash>\ncmd: ls\ntimeout_secs: -5\n</bash>'), 'wrong-type', '`timeout_secs` must be a positive number');
    assertHelpful(onlyError('<bash>\ncmd: 123\n</bash>'), 'wrong-type', '`cmd` must be a string', 'quotes');
    assertHelpful(onlyError('<file>\naction: read\nfile_path: /a\nlimit: 0\n</file>'), 'wrong-type', '`limit` must be a whole number of at least 1');
    assertHelpful(onlyError('<file>\naction: metadata\nfile_paths: /a\n</file>'), 'wrong-type', '`file_paths` must be a list');
    assertHelpful(onlyError('<todo>\noperations:\n  - action: complete\n    task_id: one\n</todo>'), 'wrong-type', '`operations[0].task_id`');
    assertHelpful(onlyError('<file>\naction: multi_edit\nfile_path: /a\nedits:\n  - old_string: a\n</file>'), 'wrong-type', '`edits[0]` is missing `new_string`');
  });
  test('too many metadata paths', () => {
    const paths = Array.from({ length: 11 }, (_, i) => `  - /f${i}`).join('\n');
    assertHelpful(onlyError(`<file>\naction: metadata\nfile_paths:\n${paths}\n</file>`), 'wrong-type', 'at most 10');
  });
  test('unknown field, with a suggestion', () => {
    assertHelpful(onlyError('<bash>\ncmd: ls\ntimeout: 5\n</bash>'), 'unknown-field', 'unknown field `timeout`', 'did you mean `timeout_secs`');
    assertHelpful(onlyError('<file>\naction: edit\nfile_path: /a\nold_str: a\nold_string: a\nnew_string: b\n</file>'), 'unknown-field', '`old_str`', '`old_string`');
  });
  test('invalid values across fields', () => {
    assertHelpful(onlyError('<file>\naction: edit\nfile_path: /a\nold_string: a\nnew_string: a\n</file>'), 'invalid-value', 'identical');
    assertHelpful(onlyError('<todo>\noperations: []\n</todo>'), 'invalid-value', 'nothing to do');
    assertHelpful(onlyError('<todo>\naction: add\ncontent: x\n</todo>'), 'invalid-value', 'takes a list of operations');
  });
  test('missing and unknown action', () => {
    assertHelpful(onlyError('<file>\nfile_path: /a\n</file>'), 'missing-action', 'read, write, edit, multi_edit, metadata');
    const e = onlyError('<search>\naction: grpe\npattern: x\n</search>');
    assertHelpful(e, 'unknown-action', '`grpe`', 'did you mean `grep`');
    assert.ok(e.message.includes('action: grep'), 'example of the likely intended action');
    assertHelpful(onlyError('<scratchpad>\naction: 7\n</scratchpad>'), 'unknown-action', 'a number (7)');
  });
  test('unknown tag (closed), with a suggestion; a lone <x> in prose is not an error', () => {
    assertHelpful(onlyError('<Bash>\ncmd: ls\n</Bash>'), 'unknown-tag', 'did you mean <bash>');
    assertHelpful(onlyError('<shell>\ncmd: ls\n</shell>'), 'unknown-tag', '<shell> is not an action tag', '<bash>, <todo>');
    assertHelpful(onlyError('<bash_output>\nfoo\n</bash_output>'), 'unknown-tag', 'written by the environment');
    assert.deepEqual(parseTurn('compare a <b and use List<int> here').items, []);
  });
  test('actions wrapped in an unknown tag still run, after the tag error', () => {
    const items = parseTurn('<action>\n<bash>\ncmd: ls\n</bash>\n</action>').items;
    assert.deepEqual(items.map((i) => (i.ok ? i.action.kind : i.error.code)), ['unknown-tag', 'bash']);
  });
  test('unclosed tag', () => {
    assertHelpful(onlyError('<bash>\ncmd: ls\n'), 'unclosed-tag', 'never closed', '</bash>');
    // A later action's closing tag must not be taken as this one's.
    const items = parseTurn('<bash>\ncmd: ls\n<file>\naction: read\nfile_path: /a\n</file>\n<bash>\ncmd: pwd\n</bash>').items;
    assert.deepEqual(items.map((i) => (i.ok ? i.action.kind : i.error.code)), ['unclosed-tag', 'file.read', 'bash']);
  });
  test('an indented tag line inside a block value is content, not a new action', () => {
    const [a] = actions('<file>\naction: write\nfile_path: /a.xml\ncontent: |\n  <config>\n  <search>\n    <depth>3</depth>\n  </search>\n  </config>\n</file>');
    assert.equal(a!.body.content, '<config>\n<search>\n  <depth>3</depth>\n</search>\n</config>\n');
  });
  test('at most 10 errors are listed per turn, the rest are counted', () => {
    const items = parseTurn('<bash>\ncmd: [\n</bash>\n'.repeat(25) + '<bash>\ncmd: ok\n</bash>').items;
    assert.equal(items.length, 12);
    assert.ok(items.slice(0, 10).every((i) => !i.ok && i.error.code === 'yaml-syntax'));
    assert.ok(items[10]!.ok);
    const last = items[11]!;
    assert.ok(!last.ok && last.error.code === 'too-many-errors' && /15 more malformed items/.test(last.error.message));
  });
  test('attributes on a tag', () => {
    assertHelpful(onlyError('<bash timeout="5">\ncmd: ls\n</bash>'), 'tag-attributes', 'no attributes');
  });
  test('several problems are all listed', () => {
    const e = onlyError('<bash>\ncmd: 5\nblock: maybe\ntimout_secs: 3\n</bash>');
    assert.match(e.message, /3 problems/);
    assert.match(e.message, /unknown field `timout_secs`/);
    assert.match(e.message, /`block` must be true or false/);
    assert.match(e.message, /`cmd` must be a string/);
  });
});

describe('error observation', () => {
  test('quotes the text, says what is wrong, shows the example, within the byte bound', () => {
    const e = onlyError('<bash>\ncmd: ls\ntimeout: 5\n</bash>');
    const obs = formatParseError(e, 10_000);
    assert.match(obs, /^<error>\n/);
    assert.match(obs, /<\/error>$/);
    assert.ok(obs.indexOf('You wrote:') < obs.indexOf('A correct example:'));
    assert.ok(obs.includes('timeout: 5'));
    const small = formatParseError(e, 200);
    assert.ok(Buffer.byteLength(small) <= 200);
    assert.match(small, /<\/error>$/);
  });
  test('huge offending text is quoted bounded', () => {
    const e = onlyError(`<bash>\ncmd: ls\nbogus: "${'x'.repeat(100_000)}"\n</bash>`);
    assert.ok(e.excerpt.length < 1200, `excerpt ${e.excerpt.length}`);
    assert.match(e.excerpt, /characters omitted/);
  });
});
