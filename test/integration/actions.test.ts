/**
 * The action language end to end against real containers: parse a turn, execute it through a
 * Docker sandbox, check both the observations and the container's actual state.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createDockerProvider, type Sandbox } from '../../src/core/sandbox/index';
import { parseTurn } from '../../src/core/actions/parser';
import { executeTurn, type TurnResult } from '../../src/core/actions/execute';
import type { ActionContext, AgentState } from '../../src/core/actions/types';

const provider = createDockerProvider();
const runId = `test-actions-${process.pid}`;

function newState(): AgentState {
  return { todos: [], nextTodoId: 1, scratchpad: [] };
}

describe('actions in a real sandbox', () => {
  let sb: Sandbox;
  let ctx: ActionContext;
  const run = (text: string, over: Partial<ActionContext> = {}): Promise<TurnResult> => executeTurn(parseTurn(text), { ...ctx, ...over });
  const obs = async (text: string, over: Partial<ActionContext> = {}) => (await run(text, over)).results.map((r) => r.record.observation).join('\n');
  const cat = async (path: string) => (await sb.readFile(path)).toString('utf8');

  before(async () => {
    sb = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId });
    ctx = { sandbox: sb, state: newState(), trace: false, maxObservationBytes: 16 * 1024, defaultTimeoutMs: 30_000 };
  });
  after(async () => {
    await sb?.close();
  });

  it('bash: output, exit code, persistent cwd, timeout, background', async () => {
    const r = await run('<bash>\ncmd: mkdir -p /work && cd /work && echo "in $(pwd)"; exit_code_here=3; (exit 3)\n</bash>');
    const rec = r.results[0]!.record;
    assert.equal(rec.kind, 'bash');
    assert.equal(rec.exitCode, 3);
    assert.equal(rec.ok, false);
    assert.match(rec.observation, /^<bash_output>\nin \/work\n\[exit code 3; [\d.]+ s\]\n<\/bash_output>$/);
    assert.match(await obs('<bash>\ncmd: pwd\n</bash>'), /\/work/);
    const slow = await run('<bash>\ncmd: sleep 30\ntimeout_secs: 1\n</bash>');
    assert.equal(slow.results[0]!.record.timedOut, true);
    assert.match(slow.results[0]!.record.observation, /timed out after 1\.0 s/);
    const huge = await run('<bash>\ncmd: sleep 0.5; echo slept\ntimeout_secs: 1e12\n</bash>');
    assert.equal(huge.results[0]!.record.timedOut, false, 'a huge timeout is not an instant one');
    assert.match(huge.results[0]!.record.observation, /slept/);
    const bg = await run('<bash>\ncmd: sleep 2 && touch /tmp/bg-done\nblock: false\n</bash>');
    assert.match(bg.results[0]!.record.observation, /started in the background/);
    assert.ok(bg.results[0]!.record.durationMs < 2000);
  });

  it('file.write keeps quotes, backslashes, $(), newlines and control bytes exactly', async () => {
    const content = 'a "double" and \'single\' quote\nback\\slash \\n literal\n$(rm -rf /) `whoami` ${HOME}\n\u0001\u0000\u00ff ✓ end';
    const yamlContent = JSON.stringify(content); // a YAML double-quoted string is a superset of JSON's
    const r = await run(`<file>\naction: write\nfile_path: /work/tricky.txt\ncontent: ${yamlContent}\n</file>`);
    assert.equal(r.results[0]!.record.ok, true, r.results[0]!.record.observation);
    assert.match(r.results[0]!.record.observation, /Created \/work\/tricky\.txt/);
    assert.deepEqual(await sb.readFile('/work/tricky.txt'), Buffer.from(content, 'utf8'));
    // And a block scalar with shell metacharacters, written to a directory that does not exist yet.
    await run('<file>\naction: write\nfile_path: /work/new/dir/s.sh\ncontent: |\n  #!/bin/sh\n  echo "$(date)" > \'/tmp/x\' && echo \\\\ done\n</file>');
    assert.equal(await cat('/work/new/dir/s.sh'), '#!/bin/sh\necho "$(date)" > \'/tmp/x\' && echo \\\\ done\n');
  });

  it('file.edit: multi-line exact replacement, not-found and non-unique errors, replace_all, mode kept', async () => {
    const src = 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n';
    await sb.writeFile('/work/calc.py', src, 0o755);
    const fixed = await run('<file>\naction: edit\nfile_path: /work/calc.py\nold_string: |\n  def add(a, b):\n      return a - b\nnew_string: |\n  def add(a, b):\n      return a + b\n</file>');
    assert.equal(fixed.results[0]!.record.ok, true, fixed.results[0]!.record.observation);
    assert.equal(await cat('/work/calc.py'), src.replace('return a - b', 'return a + b'));
    assert.match(fixed.results[0]!.record.observation, /1 replacement/);
    assert.match(fixed.results[0]!.record.observation, /2\treturn a \+ b|2\t {4}return a \+ b/);
    assert.match((await sb.exec('stat -c %a /work/calc.py')).output, /^755/);

    const missing = await run('<file>\naction: edit\nfile_path: /work/calc.py\nold_string: "def sub(a,b):"\nnew_string: "def minus(a, b):"\n</file>');
    assert.equal(missing.results[0]!.record.ok, false);
    assert.match(missing.results[0]!.record.observation, /not found/);
    assert.match(missing.results[0]!.record.observation, /5\tdef sub\(a, b\):/);

    const dup = await run('<file>\naction: edit\nfile_path: /work/calc.py\nold_string: "(a, b):"\nnew_string: "(x, y):"\n</file>');
    assert.equal(dup.results[0]!.record.ok, false);
    assert.match(dup.results[0]!.record.observation, /not unique: it occurs 2 times \(starting at lines 1, 5\)/);
    assert.equal(await cat('/work/calc.py'), src.replace('return a - b', 'return a + b'), 'failed edits write nothing');

    const all = await run('<file>\naction: edit\nfile_path: /work/calc.py\nold_string: "(a, b):"\nnew_string: "(x, y):"\nreplace_all: true\n</file>');
    assert.match(all.results[0]!.record.observation, /2 replacements/);
    assert.equal((await cat('/work/calc.py')).match(/\(x, y\):/g)?.length, 2);

    const nofile = await obs('<file>\naction: edit\nfile_path: /work/nope.py\nold_string: a\nnew_string: b\n</file>');
    assert.match(nofile, /does not exist\. To create a file, use `action: write`/);
  });

  it('file.multi_edit is atomic', async () => {
    await sb.writeFile('/work/m.txt', 'alpha\nbeta\ngamma\n');
    const bad = await run('<file>\naction: multi_edit\nfile_path: /work/m.txt\nedits:\n  - old_string: alpha\n    new_string: ALPHA\n  - old_string: delta\n    new_string: DELTA\n</file>');
    assert.equal(bad.results[0]!.record.ok, false);
    assert.match(bad.results[0]!.record.observation, /all or nothing.*edit 2 of 2 failed/s);
    assert.equal(await cat('/work/m.txt'), 'alpha\nbeta\ngamma\n');
    const good = await run('<file>\naction: multi_edit\nfile_path: /work/m.txt\nedits:\n  - old_string: alpha\n    new_string: ALPHA\n  - old_string: "ALPHA\\nbeta"\n    new_string: "ALPHA\\nBETA"\n</file>');
    assert.equal(good.results[0]!.record.ok, true, good.results[0]!.record.observation);
    assert.equal(await cat('/work/m.txt'), 'ALPHA\nBETA\ngamma\n');
  });

  it('file.read: numbered lines, offset/limit, relative paths from the shell cwd; metadata', async () => {
    await sb.writeFile('/work/lines.txt', Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
    await run('<bash>\ncmd: cd /work\n</bash>');
    const r = await obs('<file>\naction: read\nfile_path: lines.txt\noffset: 10\nlimit: 3\n</file>');
    assert.equal(r, '<file_output>\n    10\tline 10\n    11\tline 11\n    12\tline 12\n[/work/lines.txt: lines 10-12 of 50; read on with offset: 13]\n</file_output>');
    assert.match(await obs('<file>\naction: read\nfile_path: /work\n</file>'), /is a directory/);
    assert.match(await obs('<file>\naction: read\nfile_path: /work/absent\n</file>'), /does not exist/);
    assert.match(await obs('<file>\naction: read\nfile_path: /dev/zero\n</file>'), /not a regular file/);
    assert.match(await obs('<file>\naction: write\nfile_path: /dev/null\ncontent: x\n</file>'), /not a regular file/);
    const meta = await run('<file>\naction: metadata\nfile_paths: [/work/lines.txt, /work/calc.py, /work/ghost]\n</file>');
    const m = meta.results[0]!.record.observation;
    assert.match(m, /\/work\/lines\.txt\n {2}type: regular file\n {2}size: 391 bytes/);
    assert.match(m, /lines: 50/);
    assert.match(m, /permissions: -rwxr-xr-x \(755\)/);
    assert.match(m, /\/work\/ghost\n {2}does not exist/);
    assert.equal(meta.results[0]!.record.ok, false);
  });

  it('output of & jobs that arrives between actions is not swallowed by helper commands', async () => {
    await run('<bash>\ncmd: cd /work && (sleep 0.3; echo late-job-line) &\n</bash>');
    await new Promise((r) => setTimeout(r, 1500));
    const r = await obs('<file>\naction: read\nfile_path: lines.txt\nlimit: 1\n</file>');
    assert.match(r, /^<file_output>\n {5}1\tline 1\n[\s\S]*<\/file_output>\n<background_output>\nlate-job-line\n<\/background_output>$/);
  });

  it('search.glob with ** and /, search.ls with ignore', async () => {
    await sb.exec('mkdir -p /proj/src/deep /proj/tests /proj/__pycache__ && touch /proj/setup.py /proj/src/a.py /proj/src/deep/b.py /proj/src/deep/c.txt /proj/tests/test_a.py /proj/__pycache__/a.pyc /proj/x.pyc');
    const all = await obs('<search>\naction: glob\npattern: "**/*.py"\npath: /proj\n</search>');
    assert.match(all, /^<search_output>\n\/proj\/setup\.py\n\/proj\/src\/a\.py\n\/proj\/src\/deep\/b\.py\n\/proj\/tests\/test_a\.py\n\[4 files match/);
    const slash = await obs('<search>\naction: glob\npattern: "src/*.py"\npath: /proj\n</search>');
    assert.match(slash, /^<search_output>\n\/proj\/src\/a\.py\n\[1 file match/);
    const abs = await obs('<search>\naction: glob\npattern: "/proj/src/**/*.txt"\n</search>');
    assert.match(abs, /\/proj\/src\/deep\/c\.txt/);
    assert.match(await obs('<search>\naction: glob\npattern: "*.rs"\npath: /proj\n</search>'), /No files match \*\.rs under \/proj/);
    const ls = await obs('<search>\naction: ls\npath: /proj\nignore: ["*.pyc", "__pycache__"]\n</search>');
    assert.match(ls, /setup\.py/);
    assert.match(ls, /src/);
    assert.doesNotMatch(ls, /x\.pyc|__pycache__/);
    assert.match(ls, /\[\/proj: 3 entries; 2 ignored\]/);
  });

  it('search.grep falls back to grep -rn without ripgrep', async () => {
    await sb.writeFile('/proj/src/a.py', 'def handler_one():\n    pass\n\ndef other():\n    pass\n');
    await sb.writeFile('/proj/tests/test_a.py', 'from src.a import handler_one\n');
    const r = await obs('<search>\naction: grep\npattern: "def \\\\w+_one"\npath: /proj\n</search>');
    assert.match(r, /\/proj\/src\/a\.py:1:def handler_one\(\):/);
    assert.doesNotMatch(r, /test_a/);
    const inc = await obs('<search>\naction: grep\npattern: handler_one\npath: /proj\ninclude: "test_*.py"\n</search>');
    assert.match(inc, /\/proj\/tests\/test_a\.py:1:from src\.a import handler_one/);
    assert.doesNotMatch(inc, /src\/a\.py/);
    assert.match(await obs('<search>\naction: grep\npattern: zzz_nothing\npath: /proj\n</search>'), /No matches/);
  });

  it('todo and scratchpad keep state across turns', async () => {
    const state = newState();
    await run('<todo>\noperations:\n  - action: add\n    content: explore\n  - action: add\n    content: fix\n</todo>', { state });
    const r = await obs('<todo>\noperations:\n  - action: complete\n    task_id: 1\n  - action: delete\n    task_id: 9\nview_all: true\n</todo>', { state });
    assert.match(r, /Completed task 1: explore/);
    assert.match(r, /no task 9 to delete \(existing ids: 1, 2\)/);
    assert.match(r, /\[x\] 1\. explore\n\[ \] 2\. fix/);
    assert.deepEqual(state.todos, [{ id: 1, content: 'explore', done: true }, { id: 2, content: 'fix', done: false }]);
    await run('<scratchpad>\naction: add_note\ncontent: tests live in /proj/tests\n</scratchpad>', { state });
    assert.match(await obs('<scratchpad>\naction: view_all_notes\n</scratchpad>', { state }), /Note 1:\ntests live in \/proj\/tests/);
    assert.deepEqual(state.scratchpad, ['tests live in /proj/tests']);
  });

  it('finish stops the turn; end_after_cmd_success ends only on success', async () => {
    await sb.exec('rm -f /tmp/f1 /tmp/f2 /tmp/f3 /tmp/f4');
    const fin = await run('<bash>\ncmd: touch /tmp/f1\n</bash>\n<finish>\nmessage: done\n</finish>\n<bash>\ncmd: touch /tmp/f2\n</bash>');
    assert.equal(fin.endsEpisode, true);
    assert.deepEqual(fin.results.map((r) => r.record.kind), ['bash', 'finish']);
    assert.match(fin.results[1]!.record.observation, /Episode finished: done[\s\S]*1 later item in this turn was not run/);
    assert.equal((await sb.exec('test -e /tmp/f1 && test ! -e /tmp/f2')).exitCode, 0, 'ran up to finish, not after');

    const failed = await run('<bash>\ncmd: "false"\nend_after_cmd_success: true\n</bash>\n<bash>\ncmd: touch /tmp/f3\n</bash>');
    assert.equal(failed.endsEpisode, false);
    assert.equal(failed.results.length, 2);
    const ok = await run('<bash>\ncmd: "true"\nend_after_cmd_success: true\n</bash>\n<bash>\ncmd: touch /tmp/f4\n</bash>');
    assert.equal(ok.endsEpisode, true);
    assert.equal(ok.results.length, 1);
    assert.equal((await sb.exec('test -e /tmp/f3 && test ! -e /tmp/f4')).exitCode, 0);
  });

  it('parse errors are observations in place; a turn of only errors is flagged', async () => {
    const mixed = await run('<bash>\ncmd: echo ok\n</bash>\n<bash>\ncmd: grep a: b\n</bash>');
    assert.deepEqual(mixed.results.map((r) => r.record.kind), ['bash', 'parse_error']);
    assert.match(mixed.results[1]!.record.observation, /^<error>\nYour <bash> action was not run: invalid YAML at line 1/);
    assert.equal(mixed.onlyErrors, false);
    const bad = await run('<file>\naction: nuke\n</file>');
    assert.equal(bad.onlyErrors, true);
    const none = await run('no actions at all');
    assert.deepEqual([none.results.length, none.onlyErrors, none.endsEpisode], [0, false, false]);
  });

  it('every observation respects maxObservationBytes', async () => {
    const max = 600;
    await sb.writeFile('/work/big.txt', 'x'.repeat(200) + '\n' + 'y\n'.repeat(5000));
    const r = await run([
      '<bash>\ncmd: seq 1 100000\n</bash>',
      '<file>\naction: read\nfile_path: /work/big.txt\n</file>',
      '<search>\naction: grep\npattern: "y"\npath: /work\n</search>',
      '<search>\naction: glob\npattern: "**/*"\npath: /usr/lib\n</search>',
      '<bash>\ncmd: [unclosed\n</bash>',
    ].join('\n'), { maxObservationBytes: max });
    assert.equal(r.results.length, 5);
    for (const res of r.results) assert.ok(Buffer.byteLength(res.record.observation) <= max, `${res.record.kind}: ${Buffer.byteLength(res.record.observation)} bytes`);
    assert.match(r.results[0]!.record.observation, /^<bash_output>\n1\n2\n[\s\S]*\n100000\n\[exit code 0/);
    assert.match(r.results[1]!.record.observation, /read on with offset: \d+\]\n<\/file_output>$/);
  });

  it('traces file writes as line hunks when tracing is on', async () => {
    await sb.writeFile('/work/t.txt', 'a\nb\nc\n');
    const r = await run('<file>\naction: edit\nfile_path: /work/t.txt\nold_string: "b\\n"\nnew_string: "B1\\nB2\\n"\n</file>\n<file>\naction: write\nfile_path: /work/t2.txt\ncontent: "x\\ny\\n"\n</file>\n<file>\naction: read\nfile_path: /work/t.txt\n</file>', { trace: true });
    assert.deepEqual(r.results[0]!.record.trace?.writes, [{ path: '/work/t.txt', hunks: [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 2 }], created: false, linesAfter: 4 }]);
    assert.deepEqual(r.results[1]!.record.trace?.writes, [{ path: '/work/t2.txt', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], created: true, linesAfter: 2 }]);
    assert.deepEqual(r.results[2]!.record.trace?.reads, ['/work/t.txt']);
    // The edit read the file it changed; the write did not (an overwrite alone makes no edge).
    assert.deepEqual(r.results[0]!.record.trace?.reads, ['/work/t.txt']);
    assert.deepEqual(r.results[1]!.record.trace?.reads, []);
    const off = await run('<file>\naction: write\nfile_path: /work/t3.txt\ncontent: z\n</file>');
    assert.equal(off.results[0]!.record.trace, undefined);
  });
});

describe('grep with ripgrep in the image', () => {
  let sb: Sandbox;
  before(async () => {
    sb = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId });
  });
  after(async () => {
    await sb?.close();
  });

  it('uses rg when it is on PATH (sorted, with file names)', async () => {
    // The host's ripgrep (scripts/setup.sh installs Debian's, like the image) stands in for an
    // image that ships rg.
    const rg = readFileSync('/usr/bin/rg');
    await sb.writeFile('/usr/local/bin/rg', rg, 0o755);
    assert.equal((await sb.exec('rg --version >/dev/null && echo yes')).output.trim(), 'yes');
    await sb.writeFile('/code/b.txt', 'needle two\n');
    await sb.writeFile('/code/a.txt', 'hay\nneedle one\n');
    await sb.writeFile('/code/.hidden/c.txt', 'needle hidden\n');
    const ctx: ActionContext = { sandbox: sb, state: newState(), trace: false, maxObservationBytes: 8192, defaultTimeoutMs: 30_000 };
    const r = await executeTurn(parseTurn('<search>\naction: grep\npattern: "needle \\\\w+"\npath: /code\n</search>'), ctx);
    assert.equal(r.results[0]!.record.observation, '<search_output>\n/code/.hidden/c.txt:1:needle hidden\n/code/a.txt:2:needle one\n/code/b.txt:1:needle two\n[3 matching lines in /code]\n</search_output>');
    // rg's `-e` with a pattern that starts with a dash is still a pattern, not an option.
    await sb.writeFile('/code/d.txt', '--flag\n');
    const dash = await executeTurn(parseTurn('<search>\naction: grep\npattern: "--flag"\npath: /code\n</search>'), ctx);
    assert.match(dash.results[0]!.record.observation, /\/code\/d\.txt:1:--flag/);
  });

  it('an error the agent can act on is an observation; a closed sandbox rejects the turn', async () => {
    const ctx: ActionContext = { sandbox: sb, state: newState(), trace: false, maxObservationBytes: 8192, defaultTimeoutMs: 30_000 };
    await sb.writeFile('/tmp/afile', 'a regular file\n');
    const ro = await executeTurn(parseTurn('<file>\naction: write\nfile_path: /tmp/afile/inside.txt\ncontent: x\n</file>'), ctx);
    assert.equal(ro.results[0]!.record.ok, false);
    assert.match(ro.results[0]!.record.observation, /^<file_output>\nError: the file\.write action failed: .*not a directory/);
    await sb.close();
    await assert.rejects(executeTurn(parseTurn('<bash>\ncmd: ls\n</bash>'), ctx), (err: { code?: string }) => err.code === 'CONTAINER_GONE');
  });
});
