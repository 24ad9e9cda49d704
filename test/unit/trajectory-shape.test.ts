import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import { TRAJECTORY_SCHEMA } from '../../src/core/trajectory/schema';

const header = { type: 'header', schema: TRAJECTORY_SCHEMA, runId: 'r', startedAt: '2026-01-01T00:00:00Z', task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do' }, policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0', node: 'v' } };
const step = { type: 'step', index: 0, startedAt: '2026-01-01T00:00:00Z', durationMs: 1, candidates: [{ text: 'x', parses: true }], chosenText: 'x', actions: [{ kind: 'bash', input: { cmd: 'ls' }, observation: '', ok: true, durationMs: 1 }], parseErrors: [], usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [] };
const footer = { type: 'footer', endedAt: '2026-01-01T00:00:01Z', endReason: 'finished', steps: 1, usage: { promptTokens: 1, completionTokens: 1, verifierCalls: 0, verifierOutputTokens: 0 } };

/** Runs a CLI command in-process; returns its exit code and what it wrote to stderr. */
async function cli(argv: string[]): Promise<{ code: number; err: string }> {
  const lines: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = () => undefined;
  console.error = (...a: unknown[]) => void lines.push(a.join(' '));
  try {
    return { code: await main(argv), err: lines.join('\n') };
  } finally {
    console.log = log;
    console.error = error;
  }
}

const cases: [string, object[], RegExp][] = [
  ['actions is an object', [header, { ...step, actions: { kind: 'bash' } }, footer], /line 2: field actions must be an array, got object/],
  ['actions is missing', [header, { ...step, actions: undefined }, footer], /line 2: field actions must be an array, got undefined/],
  ['an action is a string', [header, { ...step, actions: ['ls'] }, footer], /line 2: field actions\[0\] must be an object/],
  ['a trace list is a number', [header, { ...step, actions: [{ ...step.actions[0], trace: { reads: 5 } }] }, footer], /line 2: field actions\[0\]\.trace\.reads must be an array/],
  ['the header task is a string', [{ ...header, task: 'x' }, step, footer], /line 1: field task must be an object/],
  ['reward.testOutcomes is an object', [header, step, { ...footer, reward: { value: 1, testOutcomes: {} } }], /line 3: field reward\.testOutcomes must be an array/],
  ['a line is a JSON array', [header, [1, 2] as unknown as object, footer], /line 2 is an array/],
];

for (const command of ['replay', 'graph', 'credit', 'export-labels']) {
  test(`tbrl ${command} on well-formed JSON of the wrong shape: a typed error naming line and field`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tbrl-shape-'));
    for (const [name, records, expected] of cases) {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.jsonl`);
      writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const args = command === 'credit' ? [command, file, '-o', join(dir, 'out.json')] : command === 'export-labels' ? [command, file, '-o', join(dir, 'labels.jsonl')] : [command, file];
      const { code, err } = await cli(args);
      assert.equal(code, 1, `${command} / ${name}: exit ${code}: ${err}`);
      assert.match(err, expected, `${command} / ${name}`);
      assert.doesNotMatch(err, /TypeError|Cannot read prop/);
    }
  });
}
