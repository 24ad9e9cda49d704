import { mock, test } from 'node:test';
import childProcess from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { splitTopLevelCommands } from '../../src/core/agent/shell-split';
import { createOraclePolicy, oracleTurns } from '../../src/core/agent/oracle';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { parseTurn } from '../../src/core/actions/parser';
import { TbrlError } from '../../src/core/errors';
import type { Task } from '../../src/core/tasks/model';

function task(solution: Task['solution']): Task {
  return {
    id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do it', tags: [], environment: { image: 'x' },
    agentTimeoutSec: 120, testTimeoutSec: 60, allowInternet: false, tests: { runner: '/t/run-tests.sh', dir: '/t/tests', kind: 'pytest-summary' },
    solution, extra: {},
  };
}

test('splitter keeps heredocs, compound commands and continuations whole, drops set -e and comments', () => {
  const script = [
    '#!/bin/bash',
    '# set up',
    'set -euo pipefail',
    'mkdir -p /app/out',
    "cat > /app/x.py <<'PY'",
    'print("a; b")',
    'if x:',
    '    pass',
    'PY',
    'if [ -f /x ]; then',
    '  echo yes',
    'fi',
    'for i in 1 2; do echo "$i"; done',
    'f() {',
    '  echo "$(date "+%s")"',
    '}',
    'case "$1" in',
    '  a) echo a;;',
    '  *) echo b;;',
    'esac',
    'echo a \\',
    '  b',
    'python3 /app/x.py',
    '',
  ].join('\n');
  const cmds = splitTopLevelCommands(script);
  assert.deepEqual(cmds, [
    'mkdir -p /app/out',
    "cat > /app/x.py <<'PY'\nprint(\"a; b\")\nif x:\n    pass\nPY",
    'if [ -f /x ]; then\n  echo yes\nfi',
    'for i in 1 2; do echo "$i"; done',
    'f() {\n  echo "$(date "+%s")"\n}',
    'case "$1" in\n  a) echo a;;\n  *) echo b;;\nesac',
    'echo a \\\n  b',
    'python3 /app/x.py',
  ]);
});

test('splitter refuses scripts it cannot run step by step', () => {
  assert.equal(splitTopLevelCommands('echo hi\nexit 0\n'), undefined, 'exit would end the persistent shell');
  assert.equal(splitTopLevelCommands('cd /app && exec ./run\n'), undefined);
  assert.equal(splitTopLevelCommands('if true; then\n echo\n'), undefined, 'unclosed if');
  assert.equal(splitTopLevelCommands("echo 'unterminated\n"), undefined);
  assert.equal(splitTopLevelCommands('cat <<EOF\nnever closed\n'), undefined);
  assert.equal(splitTopLevelCommands('# only a comment\n'), undefined);
});

test("splitter asks `bash -n` once per piece's text: the same solution split again (every trial of an eval job) spawns nothing, and a refused piece stays refused", () => {
  const spawns = mock.method(childProcess, 'spawnSync');
  try {
    // Texts no other test splits, so the verdicts are not known yet.
    const script = '#!/bin/bash\nmkdir -p /app/once-a\ncat > /app/once-a/x.py <<"PY"\nprint(1)\nPY\nfor f in /app/once-a/*; do echo "$f"; done\n';
    const first = splitTopLevelCommands(script);
    assert.equal(first?.length, 3);
    const bashChecks = () => spawns.mock.calls.filter((c) => c.arguments[0] === 'bash').length;
    assert.equal(bashChecks(), 3, 'one check per piece');
    assert.deepEqual(splitTopLevelCommands(script), first);
    assert.equal(bashChecks(), 3, 'no check again');
    // The tracker passes `ls >`; bash -n refuses it, and the second split refuses it without asking.
    assert.equal(splitTopLevelCommands('echo once-b\nls >\n'), undefined);
    const afterRefusal = bashChecks();
    assert.ok(afterRefusal > 3, 'bash was asked about the new pieces');
    assert.equal(splitTopLevelCommands('echo once-b\nls >\n'), undefined);
    assert.equal(bashChecks(), afterRefusal);
  } finally {
    spawns.mock.restore();
  }
});

test('oracle turns: split script ends with finish, every turn parses to the intended actions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-oracle-'));
  try {
    const path = join(dir, 'solution.sh');
    writeFileSync(path, '#!/bin/bash\nset -e\necho "a: b" > /tmp/x\ncat /tmp/x\n');
    const { turns, mode } = oracleTurns(task({ kind: 'script', path }));
    assert.equal(mode, 'split');
    assert.equal(turns.length, 2);
    const first = parseTurn(turns[0]);
    assert.equal(first.items.length, 1);
    assert.ok(first.items[0].ok && first.items[0].action.kind === 'bash');
    assert.equal(first.items[0].ok && first.items[0].action.body.cmd, 'echo "a: b" > /tmp/x');
    const last = parseTurn(turns[1]);
    assert.deepEqual(last.items.map((i) => (i.ok ? i.action.kind : 'error')), ['bash', 'finish']);

    // A script with `exit` runs whole, through a heredoc into a child bash.
    writeFileSync(path, 'echo hi\nexit 0\n');
    const whole = oracleTurns(task({ kind: 'script', path }));
    assert.equal(whole.mode, 'whole-script');
    assert.equal(whole.turns.length, 1);
    const parsed = parseTurn(whole.turns[0]);
    const cmd = parsed.items[0].ok ? String(parsed.items[0].action.body.cmd) : '';
    assert.match(cmd, /^bash <<'TBRL_SOLUTION_EOF'\necho hi\nexit 0\nTBRL_SOLUTION_EOF$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('oracle from solution.yaml commands: one step per command; no solution is a clear error', async () => {
  const p = createOraclePolicy(task({ kind: 'commands', commands: ['echo one', '  ', 'echo two'] }));
  assert.equal(p.kind, 'oracle');
  const t0 = await p.next({ task: task(undefined), messages: [], step: 0 });
  const t1 = await p.next({ task: task(undefined), messages: [], step: 1 });
  const t2 = await p.next({ task: task(undefined), messages: [], step: 2 });
  assert.match(t0.candidates[0].text, /cmd: echo one/);
  assert.match(t1.candidates[0].text, /cmd: echo two[\s\S]*<finish>/);
  assert.equal(t2.candidates[0].text, '', 'after the script the policy answers with an empty turn');
  assert.throws(() => createOraclePolicy(task(undefined)), (e: unknown) => e instanceof TbrlError && e.code === 'no-solution' && /--base-url/.test(e.message));
});

test('scripted policy plays its turns by step index', async () => {
  const p = new ScriptedPolicy(['<finish>\nmessage: done\n</finish>']);
  const turn = await p.next({ task: task(undefined), messages: [], step: 0 });
  assert.equal(turn.chosen, 0);
  assert.equal(turn.candidates[0].text, '<finish>\nmessage: done\n</finish>');
  assert.deepEqual(turn.usage, { promptTokens: 0, completionTokens: 0 });
});
