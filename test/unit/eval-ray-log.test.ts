/**
 * The Ray driver's job-log frames, end to end between the two languages: the real driver source
 * (Python, with a stand-in `ray` module) collects a trial directory and frames it; the client's parser
 * reads it back whole, also with Ray's forwarded worker output interleaved, and says when a frame
 * arrived damaged instead of misreading it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RAY_DRIVER_SOURCE } from '../../src/core/eval/ray-driver';
import { parseRayLogLine, writeTrialFiles } from '../../src/core/eval/ray';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-eval-ray-log-'));
mkdirSync(join(scratch, 'py'));
writeFileSync(join(scratch, 'py', 'ray.py'), '# stand-in: the frame helpers do not touch Ray\n');
writeFileSync(join(scratch, 'py', 'eval_driver.py'), RAY_DRIVER_SOURCE);

const trialJson = { schema: 'tbrl.eval-trial/1', trial: 't1__3', outcome: { class: 'passed' }, reward: 1, wallSec: 5.25 };
const trialDir = join(scratch, 'trial');
mkdirSync(join(trialDir, 'files'), { recursive: true });
writeFileSync(join(trialDir, 'trial.json'), JSON.stringify(trialJson, null, 2) + '\n');
writeFileSync(join(trialDir, 'trajectory.jsonl'), '{"type":"header","note":"naïve café ✓"}\n{"type":"footer"}\n');
const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
writeFileSync(join(trialDir, 'files', 'blob.bin'), binary);

/** What the driver prints for this trial: its readable summary line, then the frame. */
function driverLines(): { summary: string; frame: string } {
  const out = execFileSync('python3', ['-c', [
    'import sys, json; sys.path.insert(0, sys.argv[1]); import eval_driver as d',
    'r = {"trial": "t1__3", "node": "3f2a1b2c9d", "rc": 0, "stderr": "", "files": d.collect(sys.argv[2])}',
    'd.emit(d.summary(r)); d.emit(d.frame(r))',
  ].join('\n'), join(scratch, 'py'), trialDir], { encoding: 'utf8' });
  const [summary, frame] = out.split('\n');
  return { summary, frame };
}

test('a frame from the driver reads back whole: text files as text, other files as base64', () => {
  const { summary, frame } = driverLines();
  assert.equal(summary, 'tbrl eval: t1__3 passed (reward 1.000) on node 3f2a1b2c in 5.2 s');
  assert.equal(parseRayLogLine(summary), undefined, 'the readable line is not a frame');
  assert.match(frame, /^TBRL_EVAL_RESULT t1__3 \d+ [0-9a-f]{16} \{/);
  assert.ok(/^[\x20-\x7e]*$/.test(frame), 'the frame is plain ASCII');
  assert.ok(frame.includes('\\"outcome\\": {'), 'trial.json travels as readable text, not base64');
  const e = parseRayLogLine(frame);
  assert.equal(e?.type, 'result');
  if (e?.type !== 'result') return;
  assert.equal(e.result.node, '3f2a1b2c9d');
  assert.ok(e.result.files && 'base64' in e.result.files['files/blob.bin']);
  const back = join(scratch, 'back');
  writeTrialFiles(back, e.result.files!);
  for (const f of ['trial.json', 'trajectory.jsonl', 'files/blob.bin']) assert.deepEqual(readFileSync(join(back, f)), readFileSync(join(trialDir, f)), f);
});

test('worker output interleaved with the frame: found anywhere in the line, junk after it ignored', () => {
  const { frame } = driverLines();
  // Ray's forwarding thread wrote a worker line's text, the driver its frame, then the worker line's newline.
  const e = parseRayLogLine(`(run_trial pid=4242, ip=127.0.0.1) pytest: 4 passed${frame}`);
  assert.equal(e?.type, 'result');
  assert.equal(parseRayLogLine(`${frame}(run_trial pid=1) more`)?.type, 'result');
});

test('a damaged frame is reported as damaged with its trial, never misread', () => {
  const { frame } = driverLines();
  const cut = parseRayLogLine(frame.slice(0, -40));
  assert.deepEqual([cut?.type, cut && 'trial' in cut ? cut.trial : undefined], ['damaged', 't1__3']);
  const at = frame.length - 200;
  const spliced = parseRayLogLine(frame.slice(0, at) + '(run_trial pid=9) hello' + frame.slice(at + 23));
  assert.equal(spliced?.type, 'damaged');
  assert.match(spliced?.type === 'damaged' ? spliced.reason : '', /digest/);
  assert.equal(parseRayLogLine('TBRL_EVAL_RESULT t1__3 {"trial":"t1__3"}')?.type, 'damaged');
});

test('start and running markers, with Ray\'s worker prefix in front', () => {
  assert.deepEqual(parseRayLogLine('TBRL_EVAL_START {"trial": "t2__1"}'), { type: 'start', trial: 't2__1' });
  assert.deepEqual(parseRayLogLine('(run_trial pid=77, ip=127.0.0.1) TBRL_EVAL_RUNNING {"trial": "t2__1", "node": "ab", "raylet_pid": 12}'), { type: 'running', trial: 't2__1', node: 'ab', rayletPid: 12 });
  assert.deepEqual(parseRayLogLine('(TrialNode pid=77) TBRL_EVAL_RUNNING {"trial": "t2__1", "node": "ab", "raylet_pid": 12, "run": "9f0e"}'), { type: 'running', trial: 't2__1', node: 'ab', rayletPid: 12, run: '9f0e' });
  assert.equal(parseRayLogLine('just a log line'), undefined);
});

test('a node puts back the bundle\'s file modes and the CLI bundle\'s mtime that trials.json lists (Ray unpacks without either)', () => {
  const here = join(scratch, 'unpacked');
  mkdirSync(join(here, 'dist'), { recursive: true });
  writeFileSync(join(here, 'dist', 'cli-main.js'), '// bundle\n');
  writeFileSync(join(here, 'run.sh'), '#!/bin/sh\n');
  chmodSync(join(here, 'run.sh'), 0o644);
  // The client's mtime of dist/cli-main.js: the CLI's V8 code cache is named after it (src/cli/launcher.ts).
  const cliMtimeMs = 1_700_000_123_456;
  writeFileSync(join(here, 'trials.json'), JSON.stringify({ modes: { 'run.sh': 0o755 }, cliMtimeMs }));
  execFileSync('python3', ['-c', 'import sys; sys.path.insert(0, sys.argv[1]); import eval_driver as d; d.restore_modes(sys.argv[2])', join(scratch, 'py'), here]);
  assert.equal(statSync(join(here, 'run.sh')).mode & 0o777, 0o755);
  assert.equal(Math.floor(statSync(join(here, 'dist', 'cli-main.js')).mtimeMs), cliMtimeMs);
});
