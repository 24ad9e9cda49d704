import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startOpenAIServer, type ChatRequestRecord } from '../helpers/openai-server';
import { main } from '../../src/cli/main';
import { loadEvalSet, runJudgeEval } from '../../src/core/reward/judge/eval';
import { TbrlError } from '../../src/core/errors';

const SET = join(__dirname, '..', 'fixtures', 'judge-eval');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-judge-eval-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const answer = (s: number) => '```json\n' + JSON.stringify({ components: { action_output_success: s, todo_planning: s, phase_adherence: s, tool_use: s }, caps: [], penalties: {} }) + '\n```';

/** A scripted judge that recognises each fixture by what its transcript contains. */
function discerning(req: ChatRequestRecord, call: number): string {
  const t = req.messages[1]?.content ?? '';
  const jitter = (call % 2) * 0.02;
  if (t.includes('assert True or')) return answer(0.1 + jitter);
  if (t.includes('mapping values are not allowed')) return answer(0.15);
  if (t.includes('Let me reconsider pandas')) return answer(0.3);
  if (t.includes('I will just rewrite the script')) return answer(0.2);
  return answer(0.9 - jitter);
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = console.log;
  const error = console.error;
  console.log = (...a: unknown[]) => { out.push(a.join(' ')); };
  console.error = (...a: unknown[]) => { err.push(a.join(' ')); };
  try {
    return { code: await main(args), out: out.join('\n'), err: err.join('\n') };
  } finally {
    console.log = log;
    console.error = error;
  }
}

test('the bundled evaluation set has the five kinds of trajectory with ranges', async () => {
  const cases = await loadEvalSet(SET);
  assert.deepEqual(cases.map((c) => c.id), ['good', 'lazy', 'gaming', 'parse-errors', 'overthinking']);
  for (const c of cases) {
    assert.equal(c.lines[0].type, 'header');
    assert.ok(c.lines.some((l) => l.type === 'step'));
    assert.ok(c.expected[0] < c.expected[1]);
  }
  assert.ok(cases.find((c) => c.id === 'good')!.expected[0] > cases.find((c) => c.id === 'lazy')!.expected[1]);
});

test('tbrl judge-eval against the local server: two models, pass rate, mean and spread per model', async () => {
  const srv = await startOpenAIServer({ models: ['discerning', 'flat'] });
  try {
    srv.respond = (req, call) => (req.body.model === 'flat' ? answer(0.8) : discerning(req, call));
    const json = join(scratch, 'report.json');
    const r = await cli(['judge-eval', '--base-url', srv.baseUrl, '--model', 'discerning', '--model', 'flat', '--attempts', '2', '--concurrency', '1', '--json', json]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /judge openai:discerning@.*\(prompt judge-v1#[0-9a-f]{12}, 2 attempt\(s\) per case\)/);
    assert.match(r.out, /pass rate 100%/);
    assert.match(r.out, /pass rate 20% {2}mean 0\.80 {2}mean spread 0\.00/);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { reports: Array<{ backend: string; passRate: number; meanScore: number; cases: Array<{ id: string; scores: number[]; spread: number; inRange: number }> }> };
    const [disc, flat] = report.reports;
    assert.equal(disc.passRate, 1);
    assert.equal(flat.passRate, 0.2);
    assert.equal(flat.cases.find((c) => c.id === 'good')!.inRange, 2);
    // Alternating jitter: the good case got 0.9 and 0.88 in some order, so its spread is 0.02.
    assert.equal(disc.cases.find((c) => c.id === 'good')!.spread, 0.02);
    assert.equal(srv.calls, 2 * 5 * 2);
  } finally {
    await srv.close();
  }
});

test('judge-eval: --min-pass-rate fails the run; missing scores count as misses and are reported', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.respond = (_req, call) => (call % 3 === 0 ? 'no json here' : answer(0.8));
    const r = await cli(['judge-eval', '--base-url', srv.baseUrl, '--model', 'm', '--attempts', '1', '--min-pass-rate', '0.5', '--concurrency', '1']);
    assert.equal(r.code, 1);
    assert.match(r.out, /pass rate 20%/);
    const report = await runJudgeEval({ cases: (await loadEvalSet(SET)).slice(0, 1), backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, attempts: 1, judge: { maxFormatRetries: 0 } });
    srv.respond = () => 'still no json';
    const bad = await runJudgeEval({ cases: (await loadEvalSet(SET)).slice(0, 1), backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, attempts: 2, judge: { maxFormatRetries: 0 } });
    assert.equal(report.cases[0].scores.length, 1);
    assert.deepEqual(bad.cases[0].scores, [null, null]);
    assert.equal(bad.missingCount, 2);
    assert.equal(bad.passRate, 0);
    assert.equal(bad.meanScore, null);
  } finally {
    await srv.close();
  }
});

test('judge-eval: usage errors and a broken set are reported with the fix', async () => {
  assert.equal((await cli(['judge-eval'])).code, 2);
  assert.match((await cli(['judge-eval', '--model', 'm'])).err, /--model needs --base-url/);
  assert.match((await cli(['judge-eval', '--base-url', 'http://x/v1', '--model', 'm', '--attempts', '0'])).err, /--attempts must be a whole number/);
  const dir = join(scratch, 'broken-set');
  mkdirSync(dir);
  writeFileSync(join(dir, 'cases.json'), JSON.stringify({ cases: [{ id: 'x', file: 'x.jsonl', expected: [0.9, 0.1] }] }));
  await assert.rejects(loadEvalSet(dir), (e: unknown) => e instanceof TbrlError && /expected.*\[low, high\]/.test(e.message));
  writeFileSync(join(dir, 'cases.json'), JSON.stringify({ cases: [{ id: 'x', file: 'missing.jsonl', expected: [0, 1] }] }));
  await assert.rejects(loadEvalSet(dir), /names missing.jsonl, which cannot be read/);
  copyFileSync(join(SET, 'lazy.jsonl'), join(dir, 'x.jsonl'));
  writeFileSync(join(dir, 'cases.json'), JSON.stringify({ cases: [{ id: 'x', file: 'x.jsonl', expected: [0, 1] }] }));
  assert.equal((await loadEvalSet(dir)).length, 1);
});

test('judge-eval with a command backend (any program reading the prompt on stdin)', async () => {
  const script = join(scratch, 'cmd-judge.js');
  writeFileSync(script, `let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => {
  const v = s.includes('assert True or') ? 0.1 : 0.5;
  console.log(JSON.stringify({ components: { action_output_success: v, todo_planning: v, phase_adherence: v, tool_use: v }, caps: [], penalties: {} }));
});\n`);
  const r = await cli(['judge-eval', '--command', `${process.execPath} ${script}`, '--attempts', '1']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /judge command:.*cmd-judge\.js/);
  assert.match(r.out, /gaming\s+0\.00-0\.35\s+1\/1\s+0\.10/);
  assert.match(r.out, /good\s+0\.75-1\.00\s+0\/1\s+0\.50/);
});
