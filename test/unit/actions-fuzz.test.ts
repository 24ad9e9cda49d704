/**
 * Property-based: 10,000 random and mutated turns through the parser. Nothing may escape as an
 * exception, every error carries a message and an example, every observation is bounded, and
 * valid turns round-trip exactly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { parseTurn } from '../../src/core/actions/parser';
import { parseAgentTurn } from '../../src/core/agent/turn';
import { formatParseError, MAX_EXCERPT_CHARS } from '../../src/core/actions/errors';
import type { ParsedTurn } from '../../src/core/actions/types';

// Strings inside bodies: any unicode, quotes, backslashes, `$()`, newlines; no `<` so that they
// cannot open or close tags (tags inside values are covered by the unit tests).
const text = fc.string({ unit: fc.oneof(fc.constantFrom('"', "'", '\\', '$(', ')', '\n', ' ', ':', '#', '- ', '|', '\t', '{', '[', '&', '*', '!'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 60 })
  .filter((s) => !s.includes('<'));
const nonEmpty = text.filter((s) => s !== '');
const nonBlank = text.filter((s) => s.trim() !== '');

interface Spec { tag: string; kind: string; body: Record<string, unknown>; expected: Record<string, unknown> }

const bash = fc.record({ cmd: nonBlank, block: fc.option(fc.boolean(), { nil: undefined }), timeout_secs: fc.option(fc.double({ min: 0.01, max: 1e4, noNaN: true }), { nil: undefined }), end_after_cmd_success: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: ['cmd'] })
  .map((b): Spec => ({ tag: 'bash', kind: 'bash', body: b, expected: { block: true, end_after_cmd_success: false, ...strip(b) } }));
const todoOp = fc.oneof(
  fc.record({ action: fc.constant('add'), content: nonEmpty }),
  fc.record({ action: fc.constantFrom('complete', 'delete'), task_id: fc.integer({ min: 1, max: 1000 }) }),
  fc.constant({ action: 'view_all' }),
);
const todo = fc.record({ operations: fc.array(todoOp, { minLength: 1, maxLength: 4 }), view_all: fc.boolean() })
  .map((b): Spec => ({ tag: 'todo', kind: 'todo', body: b, expected: b }));
const path = nonBlank;
const editSpec = fc.record({ old_string: nonEmpty, new_string: text, replace_all: fc.boolean() }).filter((e) => e.old_string !== e.new_string);
const file = fc.oneof(
  fc.record({ action: fc.constant('read'), file_path: path, offset: fc.option(fc.nat(1e6), { nil: undefined }), limit: fc.option(fc.integer({ min: 1, max: 1e6 }), { nil: undefined }) }, { requiredKeys: ['action', 'file_path'] }),
  fc.record({ action: fc.constant('write'), file_path: path, content: text }),
  fc.record({ action: fc.constant('edit'), file_path: path, old_string: nonEmpty, new_string: text, replace_all: fc.boolean() }).filter((e) => e.old_string !== e.new_string),
  fc.record({ action: fc.constant('multi_edit'), file_path: path, edits: fc.array(editSpec, { minLength: 1, maxLength: 3 }) }),
  fc.record({ action: fc.constant('metadata'), file_paths: fc.array(path, { minLength: 1, maxLength: 10 }) }),
).map((b): Spec => ({ tag: 'file', kind: `file.${b.action}`, body: b, expected: strip(b) }));
const search = fc.oneof(
  fc.record({ action: fc.constant('grep'), pattern: nonEmpty, path: fc.option(path, { nil: undefined }), include: fc.option(path, { nil: undefined }) }, { requiredKeys: ['action', 'pattern'] }),
  fc.record({ action: fc.constant('glob'), pattern: nonEmpty, path: fc.option(path, { nil: undefined }) }, { requiredKeys: ['action', 'pattern'] }),
  fc.record({ action: fc.constant('ls'), path, ignore: fc.array(path, { maxLength: 3 }) }),
).map((b): Spec => ({ tag: 'search', kind: `search.${b.action}`, body: b, expected: strip(b) }));
const scratchpad = fc.oneof(
  fc.record({ action: fc.constant('add_note'), content: nonEmpty }),
  fc.constant({ action: 'view_all_notes' }),
).map((b): Spec => ({ tag: 'scratchpad', kind: `scratchpad.${b.action}`, body: b, expected: b }));
const finish = fc.record({ message: text }).map((b): Spec => ({ tag: 'finish', kind: 'finish', body: b, expected: b }));
const anyAction = fc.oneof(bash, todo, file, search, scratchpad, finish);

/**
 * Fixed seeds keep CI deterministic; TBRL_FUZZ_SEED=random (or a number) explores further, and a
 * failure prints its seed so it can be replayed.
 */
const envSeed = process.env.TBRL_FUZZ_SEED;
const seedFor = (n: number) => (envSeed === 'random' ? Math.floor(Math.random() * 2 ** 31) : envSeed ? Number(envSeed) + n : 20261130 + n);
const params = (n: number, numRuns: number): fc.Parameters<unknown> => ({ numRuns, seed: seedFor(n), includeErrorInReport: true });

function strip(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
function render(s: Spec): string {
  return `<${s.tag}>\n${stringify(strip(s.body), { lineWidth: 0 })}</${s.tag}>`;
}

function checkInvariants(turn: ParsedTurn): void {
  assert.ok(Array.isArray(turn.items));
  for (const item of turn.items) {
    if (item.ok) {
      assert.ok(item.action.kind.length > 0);
      continue;
    }
    const e = item.error;
    assert.ok(typeof e.message === 'string' && e.message.trim().length > 0, 'message');
    assert.ok(e.example && e.example.length > 0 && e.message.includes(e.example), 'example in message');
    assert.ok(e.excerpt.length <= MAX_EXCERPT_CHARS + 80, `excerpt ${e.excerpt.length}`);
    const obs = formatParseError(e, 2000);
    assert.ok(Buffer.byteLength(obs) <= 2000 && obs.startsWith('<error>') && obs.endsWith('</error>'));
  }
}

function errorCount(turn: ParsedTurn): number {
  return turn.items.filter((i) => !i.ok).length;
}

/** Mutations that must each produce an error, with the code(s) that may describe it. */
type Mutation = (s: Spec, rnd: number) => { text: string; codes: string[] };
const KNOWN_BAD: Mutation[] = [
  (s) => ({ text: render(s).replace(new RegExp(`</${s.tag}>$`), ''), codes: ['unclosed-tag'] }),
  (s) => ({ text: render(s).replace(`<${s.tag}>\n`, `<${s.tag}>\nzz_unknown_field: 1\n`), codes: ['unknown-field'] }),
  (s) => ({ text: render(s).replace(`<${s.tag}>\n`, `<${s.tag}>\nbad: [unclosed\n`), codes: ['yaml-syntax'] }),
  (s) => ({ text: `<${s.tag}>\n- just\n- a list\n</${s.tag}>`, codes: ['not-a-mapping'] }),
  (s) => ({ text: render(s).replace(new RegExp(`<(/?)${s.tag}>`, 'g'), `<$1${s.tag}x>`), codes: ['unknown-tag'] }),
  (s) => s.tag === 'file' || s.tag === 'search' || s.tag === 'scratchpad'
    ? { text: render({ ...s, body: { ...s.body, action: 'frobnicate' } }), codes: ['unknown-action'] }
    : { text: render({ ...s, body: { ...s.body, zz: true } }), codes: ['unknown-field'] },
  (s, r) => {
    // A wrong type for the first field.
    const [k] = Object.keys(strip(s.body)).filter((x) => x !== 'action');
    if (!k) return { text: `<${s.tag} a="1">\n</${s.tag}>`, codes: ['tag-attributes'] };
    const wrong = typeof s.body[k] === 'string' ? (r > 0.5 ? 42 : [1, 2]) : typeof s.body[k] === 'boolean' ? 'maybe' : { nested: 'map' };
    return { text: render({ ...s, body: { ...s.body, [k]: wrong } }), codes: ['wrong-type', 'invalid-value'] };
  },
  (s) => {
    const req: Record<string, string> = { bash: 'cmd', 'file.read': 'file_path', 'file.write': 'content', 'file.edit': 'old_string', 'file.multi_edit': 'edits', 'file.metadata': 'file_paths', 'search.grep': 'pattern', 'search.glob': 'pattern', 'search.ls': 'path', 'scratchpad.add_note': 'content' };
    const k = req[s.kind];
    if (!k) return { text: `<${s.tag}>`, codes: ['unclosed-tag'] };
    const body = { ...s.body };
    delete body[k];
    return { text: render({ ...s, body }), codes: ['missing-field'] };
  },
];

/** Mutations with no known outcome: only the invariants are checked. */
function blindMutation(t: string, kind: number, a: number, b: number, junk: string): string {
  const i = Math.floor(a * (t.length + 1));
  const j = Math.min(t.length, i + Math.floor(b * 40));
  switch (kind) {
    case 0: return t.slice(0, i); // cut anywhere (mid-tag, mid-YAML)
    case 1: return t.slice(0, i) + t.slice(j); // delete a span
    case 2: return t.slice(0, i) + junk + t.slice(i); // insert junk
    case 3: return t.slice(0, i) + junk.repeat(2000) + t.slice(i); // huge strings
    case 4: return t.replace(/\n/g, a > 0.5 ? '\n\t' : '\n   '); // broken indentation
    case 5: return t.slice(0, i) + '<think>' + t.slice(i, j) + '</think>' + t.slice(j);
    case 6: return t.split('').reverse().join('');
    default: return t.slice(0, i) + t.slice(i, j).toUpperCase() + t.slice(j);
  }
}

test('10,000 random and mutated turns: no exception, every error helpful, valid turns round-trip', () => {
  let runs = 0;
  let errorsSeen = 0;

  // 1) Valid turns (2,000): several actions in order, prose and <think> between; exact round trip.
  fc.assert(fc.property(fc.array(anyAction, { minLength: 1, maxLength: 4 }), text, (specs, prose) => {
    runs++;
    const turn = parseTurn(specs.map((s) => `${prose}\n${render(s)}`).join('\n<think>x</think>\n'));
    checkInvariants(turn);
    assert.equal(errorCount(turn), 0, JSON.stringify(turn.items.filter((i) => !i.ok)));
    assert.deepEqual(turn.items.map((i) => (i.ok ? i.action.kind : '')), specs.map((s) => s.kind));
    turn.items.forEach((item, n) => {
      // What the YAML library itself reads back from the rendered body (it has its own corner
      // cases with whitespace-only block scalars); the parser must add nothing and lose nothing.
      const reread = parse(stringify(strip(specs[n]!.body), { lineWidth: 0 })) as Record<string, unknown>;
      if (item.ok) for (const k of Object.keys(specs[n]!.expected)) assert.deepEqual(item.action.body[k], k in reread ? reread[k] : JSON.parse(JSON.stringify(specs[n]!.expected[k])), `${specs[n]!.kind}.${k} in ${JSON.stringify(item.action.raw)}`);
    });
  }), params(1, 2000) as fc.Parameters<[Spec[], string]>);

  // 2) Known-bad mutations (3,000): each must yield an error of the right kind, and a valid
  // action placed after it must still parse (one bad action does not take the turn down).
  fc.assert(fc.property(anyAction, fc.nat(KNOWN_BAD.length - 1), fc.double({ min: 0, max: 1, noNaN: true }), (spec, m, r) => {
    runs++;
    const { text: bad, codes } = KNOWN_BAD[m]!(spec, r);
    const turn = parseTurn(`${bad}\n\n<bash>\ncmd: echo after\n</bash>`);
    checkInvariants(turn);
    const errs = turn.items.filter((i) => !i.ok);
    assert.ok(errs.length >= 1, `no error for mutation ${m}: ${bad}`);
    errorsSeen += errs.length;
    const first = turn.items[0]!;
    assert.ok(!first.ok && codes.includes(first.error.code!), `mutation ${m}: expected ${codes.join('|')}, got ${JSON.stringify(first)}`);
    const last = turn.items[turn.items.length - 1]!;
    assert.ok(last.ok && last.action.body.cmd === 'echo after', `the following action was lost after mutation ${m}`);
  }), params(2, 3000) as fc.Parameters<[Spec, number, number]>);

  // 3) Blind mutations of valid turns (3,000): cuts, deletions, junk, huge strings, indentation.
  fc.assert(fc.property(fc.array(anyAction, { minLength: 1, maxLength: 3 }), fc.nat(7), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.string({ unit: 'binary', maxLength: 12 }), (specs, kind, a, b, junk) => {
    runs++;
    const turn = parseTurn(blindMutation(specs.map(render).join('\n'), kind, a, b, junk));
    checkInvariants(turn);
    errorsSeen += errorCount(turn);
  }), params(3, 3000) as fc.Parameters<[Spec[], number, number, number, string]>);

  // 4) Pure noise (2,000): random unicode, random tag soup.
  const tagSoup = fc.array(fc.oneof(
    fc.constantFrom('<bash>', '</bash>', '<file>', '</file>', '<think>', '</think>', '<todo>', '</todo>', '<finish/>', '<search x>', '<x>', '</x>', 'cmd: ', 'action: ', '\n', '  ', ': ', '"', '|'),
    fc.string({ unit: 'binary', maxLength: 8 }),
  ), { maxLength: 40 }).map((parts) => parts.join(''));
  fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 400 }), tagSoup), (s) => {
    runs++;
    checkInvariants(parseTurn(s));
  }), params(4, 2000) as fc.Parameters<[string]>);

  assert.equal(runs, 10_000);
  assert.ok(errorsSeen >= 3000, `errors seen: ${errorsSeen}`);
});

test('pathological inputs stay fast', () => {
  const cases = ['<a>'.repeat(100_000), '<bash>'.repeat(50_000), `<bash>\ncmd: "${'x'.repeat(1_000_000)}"\n</bash>`, '<think>'.repeat(50_000) + '</think>', '<x></y>'.repeat(50_000)];
  for (const c of cases) {
    const t0 = Date.now();
    const turn = parseTurn(c);
    checkInvariants(turn);
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms on ${c.slice(0, 20)}…`);
  }
});

/**
 * What SmolLM2-135M (the local default model, via `tbrl serve`, temperature 0.8-1) actually wrote
 * during this session's runs, verbatim: prose, half-formed tags and markdown. Seeds for the same
 * invariants and blind mutations; add more from `tbrl replay RUN --candidates` of local-model runs.
 */
const REAL_SMALL_MODEL_OUTPUTS = [
  "TERSE – I'm glad to set off.\n",
  "I'd like to help with a p",
  'Alright, okay? I\'m sorry, I\'m sorry',
  'Aloha!',
  // `npm run demo` on the bundled task, 2026-12-02 (96-token turns, N=4): prose, markdown lists and an
  // empty fenced block, never a tag.
  "This task is a perfect example of a \"tutorial\" in a script. I love it.\n\nHere's how you can write a script to count word frequencies in a text file:\n\n```python\n# Your script here\n```\n\nThis script does not require any external dependencies and is fully\nautomatic in its intended behavior. It is designed to be completely\nautomatic with a simple script that takes a filename as input, which is a\ntypical",
  "This task is a perfect example of how to work in a very structured way, taking a lot of time to plan and debug your code.\n\nHere's the plan:\n\n* **Planning.** Read the task, understand what the task is, and plan how to complete it.\n* **Exploration.** Read what can be done and explore the task.\n* **Explanatory document.** Create a document (a plan, a script, a file, a",
  "This task is a perfect example of how to work efficiently with your environment, while you only need to write a script. Here's how to structure your script:\n\n1. **Plan Refining:**\n   - Create a new list of words and their frequencies.\n   - Create a list of words and their frequencies as a JSON array (a CSV file).\n   - If you're planning to implement the task yourself, make a copy of the list of words and use it to create",
  "This task is a perfect example of how to work efficiently with your environment, while you only need to write a script. A todo list for your task. Planning. Exploring. Read-only.\n\nYou can actually do it with a script.\n\nSo the script, /app/wordfreq.py, which writes out how the word frequencies have been counted to a JSON array of integers, so that you can check if the count is correct.\n\nHowever",
];

test('real small-model outputs and their mutations keep every parser invariant', () => {
  for (const text of REAL_SMALL_MODEL_OUTPUTS) {
    checkInvariants(parseTurn(text));
    // As the loop reads them: a turn without a tag is one no-action error that quotes it.
    const turn = parseAgentTurn(text);
    assert.ok(turn.items.length >= 1);
    checkInvariants(turn);
    if (parseTurn(text).items.length === 0) {
      const only = turn.items[0]!;
      assert.ok(!only.ok && only.error.code === 'no-action' && only.error.excerpt.length > 0 && text.startsWith(only.error.excerpt.slice(0, 20)), JSON.stringify(only));
    }
    for (let kind = 0; kind < 8; kind++) checkInvariants(parseTurn(blindMutation(text, kind, 0.37, 0.5, '<bash>\ncmd: ')));
  }
});
