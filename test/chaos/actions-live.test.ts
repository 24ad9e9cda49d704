/**
 * Malformed and hostile turns *executed* on a real sandbox (the parser alone is fuzzed 10,000
 * times in test/unit/actions-fuzz.test.ts). Turns are valid templates mutated at random — cut,
 * tags duplicated or swapped, junk spliced in, wrong types, huge values, device and /proc paths,
 * commands that kill or replace the persistent shell. executeTurn must never throw, every
 * observation must stay within the bound, and the sandbox must still answer at the end.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseTurn } from '../../src/core/actions/parser';
import { executeTurn } from '../../src/core/actions/execute';
import type { AgentState } from '../../src/core/actions/types';
import { createDockerProvider } from '../../src/core/sandbox/index';
import { chaosCase, recordRunId } from './helpers/chaos';

const RUNS = Number(process.env.TBRL_CHAOS_TURNS ?? 300);
const MAX_OBS = 16 * 1024;
const SEED = Number(process.env.TBRL_FUZZ_SEED ?? 20261130);

const junk = fc.oneof(
  fc.constantFrom('', '<', '>', '</bash>', '<bash>', '<file>', '</file', '<<', ':', '- ', '|', '"', "'", '\\', '$(', '`', '\u0000', '\n', '  ', '\t', '*x', '&x', '{', '[', 'null', '1e999', '-1', '\uFFFF', '🙂'),
  fc.string({ maxLength: 30 }),
);
const cmd = fc.oneof(
  fc.constantFrom('echo hi', 'ls /', 'cat /nonexistent', 'false', 'exit 3', 'kill -9 $$', 'exec sleep 0.2', 'cd /tmp && pwd', 'printf "\\x00\\xff"', 'head -c 300000 /dev/urandom', 'sleep 9', 'cat', 'yes | head -c 100000', 'ulimit -a | head -2', 'set -e; false', 'trap "" INT TERM; sleep 0.1', 'exec 1>&-', 'unset PATH', 'cd /nonexistent'),
  junk.map((j) => `echo ${JSON.stringify(j)}`),
  junk,
);
const path = fc.oneof(
  fc.constantFrom('/tmp/f.txt', 'rel/f.txt', '../../../../tmp/up.txt', '/dev/zero', '/dev/urandom', '/proc/self/mem', '/proc/1/environ', '/', '/tmp', '', ' ', '/etc/shadow', '/root/.bashrc', '/tmp/a\nb', '/sys/kernel', '/tmp/' + 'x'.repeat(300)),
  junk.map((j) => `/tmp/${j}`),
);
const yamlStr = (s: string) => JSON.stringify(s);
const valid = fc.oneof(
  fc.record({ c: cmd, t: fc.option(fc.constantFrom('0', '0.5', '2', '-1', '"x"', '1e999', '[]'), { nil: undefined }), b: fc.option(fc.constantFrom('true', 'false', '"no"', '3'), { nil: undefined }) })
    .map(({ c, t, b }) => `<bash>\ncmd: ${yamlStr(c)}${t ? `\ntimeout_secs: ${t}` : ''}${b ? `\nblock: ${b}` : ''}\n</bash>`),
  fc.record({ p: path, big: fc.boolean(), bin: fc.boolean() }).map(({ p, big, bin }) => `<file>\naction: write\nfile_path: ${yamlStr(p)}\ncontent: ${yamlStr(big ? 'z'.repeat(200_000) : bin ? '\u0000\u0001\uFFFD' : 'hello\n')}\n</file>`),
  fc.record({ p: path, o: fc.constantFrom('', '\noffset: -5', '\noffset: 99999999', '\nlimit: 0', '\nlimit: "x"') }).map(({ p, o }) => `<file>\naction: read\nfile_path: ${yamlStr(p)}${o}\n</file>`),
  fc.record({ p: path, a: junk, b: junk }).map(({ p, a, b }) => `<file>\naction: edit\nfile_path: ${yamlStr(p)}\nold_string: ${yamlStr(a)}\nnew_string: ${yamlStr(b)}\n</file>`),
  fc.record({ a: fc.constantFrom('grep', 'glob', 'ls'), p: junk, d: path }).map(({ a, p, d }) => `<search>\naction: ${a}\npattern: ${yamlStr(p || '.')}\npath: ${yamlStr(d)}\n</search>`),
  junk.map((j) => `<todo>\noperations:\n  - action: add\n    content: ${yamlStr(j)}\n  - action: complete\n    task_id: 99\n</todo>`),
  junk.map((j) => `<scratchpad>\naction: add_note\ncontent: ${yamlStr(j)}\n</scratchpad>`),
);
const mutate = (t: string): fc.Arbitrary<string> => fc.oneof(
  fc.constant(t),
  fc.nat(t.length).map((n) => t.slice(0, n)),
  fc.tuple(fc.nat(t.length), junk).map(([n, j]) => t.slice(0, n) + j + t.slice(n)),
  fc.constant(t + t),
  fc.constant(t.replace(/<(\/?)(\w+)>/g, '<$1file>')),
  fc.constant(`prose before ${t} prose after <bash>\nunclosed`),
  fc.constant(t.replace(/: /, ':\n  - [')),
);
const turn = fc.array(valid.chain(mutate), { minLength: 1, maxLength: 3 }).map((parts) => parts.join('\n'));

chaosCase(`${RUNS} malformed/hostile turns executed on one real sandbox (parseTurn → executeTurn)`, 'no throw; every observation ≤ 16 KiB; parse errors and failed actions are observations; the sandbox answers afterwards', async () => {
  const runId = `chaos-actions-${process.pid}`;
  recordRunId(runId);
  const sandbox = await createDockerProvider().create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId });
  const state: AgentState = { todos: [], nextTodoId: 1, scratchpad: [] };
  const tally = { turns: 0, actions: 0, parseErrors: 0, failed: 0, timedOut: 0, maxObs: 0 };
  try {
    await fc.assert(fc.asyncProperty(turn, async (text) => {
      const parsed = parseTurn(text);
      const result = await executeTurn(parsed, { sandbox, state, trace: false, maxObservationBytes: MAX_OBS, defaultTimeoutMs: 3000 });
      tally.turns++;
      for (const { record: a } of result.results) {
        assert.equal(typeof a.observation, 'string');
        const bytes = Buffer.byteLength(a.observation);
        tally.maxObs = Math.max(tally.maxObs, bytes);
        assert.ok(bytes <= MAX_OBS, `observation of ${a.kind} is ${bytes} bytes`);
        if (a.kind === 'parse_error') tally.parseErrors++;
        else tally.actions++;
        if (!a.ok && a.kind !== 'parse_error') tally.failed++;
        if (a.timedOut) tally.timedOut++;
      }
    }), { numRuns: RUNS, seed: SEED, endOnFailure: true });
    const alive = await sandbox.exec('echo still-alive', { timeoutMs: 10_000 });
    assert.match(alive.output, /still-alive/);
  } finally {
    await sandbox.close();
  }
  return `${tally.turns} turns: ${tally.actions} actions run (${tally.failed} failed with an observation, ${tally.timedOut} timed out), ${tally.parseErrors} parse-error observations; largest observation ${tally.maxObs} B; shell answered afterwards`;
}, { timeout: 300_000 });
