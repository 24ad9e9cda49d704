import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startOpenAIServer } from '../helpers/openai-server';
import { Judge, JudgeBackendSwitch, loadJudgePrompt, JUDGE_PROMPT_VERSION } from '../../src/core/reward/judge/index';
import { computeJudgeScore, parseJudgeAnswer, COMPONENT_WEIGHTS } from '../../src/core/reward/judge/rubric';
import { parseBackendConfig } from '../../src/core/reward/judge/backends';
import { renderTranscript } from '../../src/core/reward/judge/transcript';
import { combineReward, judgeFailureLine } from '../../src/core/reward/index';
import { TbrlError } from '../../src/core/errors';
import type { TrajectoryLine } from '../../src/core/trajectory/schema';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-judge-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const fastClient = { retryBaseMs: 1, retryMaxMs: 5 };

function verdict(c: [number, number, number, number], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    components: { action_output_success: c[0], todo_planning: c[1], phase_adherence: c[2], tool_use: c[3] },
    caps: [], penalties: { overthinking: 0, gaming: 0, phase_violations: 0 }, ...extra,
  });
}
const fenced = (json: string) => `The agent planned and explored.\n\`\`\`json\n${json}\n\`\`\``;

const trajectory: TrajectoryLine[] = [
  {
    type: 'header', schema: 'tbrl.trajectory/1.0', runId: 'r1', startedAt: '2026-01-01T00:00:00Z',
    task: { id: 'hello', dir: '/t', format: 'terminal-bench', instruction: 'Create /app/hello.txt containing Hello.' },
    policy: { kind: 'model', model: 'm' }, config: {}, versions: { tbrl: '0.1.0', node: 'v20' },
  },
  {
    type: 'step', index: 0, startedAt: '', durationMs: 5, candidates: [], chosenText: '<todo>\noperations:\n  - action: add\n    content: explore /app\n</todo>',
    actions: [{ kind: 'todo', input: {}, observation: 'Todo added: "explore /app" (ID: 1)', ok: true, durationMs: 1 }],
    parseErrors: [], usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [],
  },
  {
    type: 'step', index: 1, startedAt: '', durationMs: 5, candidates: [], chosenText: '<bash>\ncmd: "echo Hello > /app/hello.txt"\n</bash>',
    actions: [{ kind: 'bash', input: { cmd: 'echo Hello > /app/hello.txt' }, observation: '', ok: true, exitCode: 0, durationMs: 3 }],
    parseErrors: [], usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [],
  },
  {
    type: 'footer', endedAt: '', endReason: 'finished', steps: 2, usage: { promptTokens: 2, completionTokens: 2, verifierCalls: 0, verifierOutputTokens: 0 },
    reward: { tests: 1, weights: { tests: 1, judge: 0 }, total: 1 },
  },
];

test('rubric weights are 35/25/25/15 and the total is computed, capped and penalised exactly', () => {
  assert.deepEqual(Object.values(COMPONENT_WEIGHTS), [0.35, 0.25, 0.25, 0.15]);
  const v = (caps: string[], pen: Partial<Record<'overthinking' | 'gaming' | 'phase_violations', number>> = {}) => {
    const p = parseJudgeAnswer(verdict([1, 0.8, 0.6, 0.4], { caps, penalties: { overthinking: 0, gaming: 0, phase_violations: 0, ...pen } }));
    assert.ok(p.ok);
    return computeJudgeScore(p.verdict);
  };
  assert.equal(v([]), 0.76); // 0.35 + 0.2 + 0.15 + 0.06
  assert.equal(v([], { overthinking: 0.25 }), 0.51);
  assert.equal(v(['no_initial_todos']), 0.4);
  assert.equal(v(['skipped_exploration', 'no_valid_action']), 0.09);
  assert.equal(v([], { gaming: 0.5, overthinking: 0.4 }), 0);
});

test('judge answers: fenced JSON, bare JSON, YAML and a <think> preamble all parse', () => {
  const json = verdict([0.5, 0.5, 0.5, 0.5]);
  for (const text of [fenced(json), `Result: ${json}`, '<think>{"components": 1}</think>\n' + fenced(json),
    'components:\n  action_output_success: 0.5\n  todo_planning: 0.5\n  phase_adherence: 0.5\n  tool_use: 0.5\ncaps: []\n']) {
    const p = parseJudgeAnswer(text);
    assert.ok(p.ok, `${text}: ${JSON.stringify(p)}`);
    assert.equal(computeJudgeScore(p.verdict), 0.5);
  }
});

test('malformed judge answers name every problem', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /empty/],
    ['I think it deserves 0.8', /object/],
    [fenced('{"components": {"action_output_success": 1.4, "todo_planning": "high", "phase_adherence": 0.5}}'), /between 0 and 1.*got 1.4[\s\S]*todo_planning.*"high"[\s\S]*tool_use/],
    [fenced(verdict([1, 1, 1, 1], { caps: ['too_lazy'] })), /unknown cap "too_lazy"/],
    [fenced(verdict([1, 1, 1, 1], { penalties: { gaming: 0.9 } })), /penalties.gaming must be between 0 and 0.5/],
    ['```json\n{"components": {\n```', /not valid JSON/],
  ];
  for (const [text, re] of cases) {
    const p = parseJudgeAnswer(text);
    assert.equal(p.ok, false, text);
    if (!p.ok) assert.match(p.problems.join('\n'), re);
  }
});

test('transcript shows turns and results but never the reward or test outcome', () => {
  const text = renderTranscript(trajectory);
  assert.match(text, /Create \/app\/hello.txt/);
  assert.match(text, /## Turn 1\n\[Agent\]\n<todo>/);
  assert.match(text, /<bash result, exit 0>/);
  assert.match(text, /ended by finished/);
  assert.doesNotMatch(text, /reward|tests.*1/i);
  const long = renderTranscript(trajectory, { turnChars: 100, observationChars: 100, totalChars: 300 });
  assert.ok(long.length < 900);
});

test('prompt files are versioned and the version (with a content hash) is recorded with the score', async () => {
  const p = loadJudgePrompt();
  assert.equal(p.version, JUDGE_PROMPT_VERSION);
  assert.match(p.text, /action_output_success/);
  assert.throws(() => loadJudgePrompt('judge-v999'), (e: unknown) => e instanceof TbrlError && e.code === 'judge.prompt-missing');
  const srv = await startOpenAIServer();
  try {
    srv.enqueue(fenced(verdict([1, 1, 1, 1])));
    const judge = new Judge({ backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'judge-m' }, log: () => undefined });
    const r = await judge.score(trajectory);
    assert.ok(r.ok);
    assert.equal(r.score, 1);
    assert.equal(r.promptVersion, `judge-v1#${p.sha256}`);
    assert.equal(r.backend, `openai:judge-m@${srv.baseUrl}`);
    assert.equal(srv.requests[0].messages[0].role, 'system');
    assert.equal(srv.requests[0].messages[0].content, p.text);
    assert.match(srv.requests[0].messages[1].content, /## Turn 2/);
  } finally {
    await srv.close();
  }
});

test('a malformed answer is retried with a format correction that quotes the problem', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.enqueue('Score: 0.7, good job', fenced(verdict([0.8, 0.8, 0.8, 0.8])));
    const logs: string[] = [];
    const judge = new Judge({ backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, log: (l) => logs.push(l) });
    const r = await judge.score(trajectory);
    assert.ok(r.ok);
    assert.equal(r.score, 0.8);
    assert.equal(r.attempts.length, 2);
    assert.equal(r.attempts[0].ok, false);
    const second = srv.requests[1].messages;
    assert.equal(second.length, 4);
    assert.deepEqual(second[2], { role: 'assistant', content: 'Score: 0.7, good job' });
    assert.match(second[3].content, /could not be used[\s\S]*```json/);
    assert.ok(logs.some((l) => /malformed answer.*asking again/.test(l)));
  } finally {
    await srv.close();
  }
});

test('after N malformed answers the score is missing and the reward falls back to tests with weights renormalised', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.respond = () => 'no idea';
    const judge = new Judge({ backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, maxFormatRetries: 2, log: () => undefined });
    const r = await judge.score(trajectory);
    assert.equal(r.ok, false);
    assert.equal(srv.calls, 3);
    assert.ok(!r.ok && /no usable judge answer after 3 attempt/.test(r.missing));
    const reward = combineReward({ tests: 0.7, outcomes: [] }, r);
    assert.deepEqual(reward.weights, { tests: 1, judge: 0 });
    assert.equal(reward.total, 0.7);
    assert.ok(reward.judge && 'missing' in reward.judge && /no usable judge answer/.test(reward.judge.missing));
  } finally {
    await srv.close();
  }
});

test('a backend that keeps failing gives a missing score naming the error, never 0', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.respond = () => ({ status: 500, error: { message: 'overloaded' } });
    const judge = new Judge({ backend: { kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, maxBackendRetries: 1, switchOptions: { clientOptions: fastClient, log: () => undefined } });
    const r = await judge.score(trajectory);
    assert.equal(r.ok, false);
    assert.ok(!r.ok && /backend error.*overloaded/.test(r.missing), !r.ok ? r.missing : '');
    assert.equal(r.attempts.length, 2);
  } finally {
    await srv.close();
  }
});

test('combined reward: 0.65 tests + 0.35 judge by default, configurable, tests only without a judge', () => {
  const judged = { ok: true as const, score: 0.4, components: {}, verdict: undefined as never, promptVersion: 'judge-v1#x', backend: 'b', attempts: [] };
  const r = combineReward({ tests: 1, outcomes: [] }, judged);
  assert.deepEqual(r.weights, { tests: 0.65, judge: 0.35 });
  assert.equal(r.total, 0.79);
  assert.deepEqual(r.judge, { score: 0.4, components: {}, promptVersion: 'judge-v1#x', backend: 'b' });
  assert.equal(combineReward({ tests: 0.5, outcomes: [] }, judged, { tests: 0.5, judge: 0.5 }).total, 0.45);
  const none = combineReward({ tests: 0.5, outcomes: [] }, undefined);
  assert.deepEqual(none.weights, { tests: 1, judge: 0 });
  assert.deepEqual(none.judge, { missing: 'no judge configured' });
  assert.equal(none.total, 0.5);
  // A failed test run is a typed outcome: tests stays undefined, its share earns nothing.
  const failed = combineReward({ error: { kind: 'timeout', message: 'killed', logTail: '...' } }, judged);
  assert.equal(failed.tests, undefined);
  assert.equal(failed.testError?.kind, 'timeout');
  assert.equal(failed.total, 0.14);
  assert.throws(() => combineReward({ tests: 1 }, judged, { tests: -1 }), /non-negative/);
});

test('backend configs are validated with an example of a correct one', () => {
  assert.throws(() => parseBackendConfig({ kind: 'openai', model: 'm' }, 'judge.json'), /judge.json: "baseUrl" must be an http\(s\) URL[\s\S]*Fix:[\s\S]*"kind": "openai"/);
  assert.throws(() => parseBackendConfig({ kind: 'claude' }, 'x'), /"kind" must be "openai" or "command"/);
  assert.throws(() => parseBackendConfig({ kind: 'command', command: 'x', args: [1] }, 'x'), /"args" must be a list of strings/);
  assert.deepEqual(parseBackendConfig({ kind: 'command', command: 'node', args: ['a.js'] }, 'x'), { kind: 'command', command: 'node', args: ['a.js'], cwd: undefined, timeoutMs: undefined });
});

// A command backend: reads the prompt on stdin and prints a verdict whose tool_use says whether it saw the transcript.
function writeCommandJudge(name: string, components: [number, number, number, number]): string {
  const path = join(scratch, name);
  writeFileSync(path, `let s = '';
process.stdin.on('data', (d) => (s += d)).on('end', () => {
  const saw = s.includes('# Task given to the agent') && s.includes('action_output_success');
  const c = ${JSON.stringify(components)};
  process.stdout.write('ok\\n\`\`\`json\\n' + JSON.stringify({ components: { action_output_success: c[0], todo_planning: c[1], phase_adherence: c[2], tool_use: saw ? c[3] : 0 }, caps: [], penalties: {} }) + '\\n\`\`\`\\n');
});
`);
  return path;
}

test('command backend: the prompt goes to stdin, the answer comes from stdout; failures are reported', async () => {
  const script = writeCommandJudge('judge-a.js', [1, 1, 1, 1]);
  const judge = new Judge({ backend: { kind: 'command', command: process.execPath, args: [script] }, log: () => undefined });
  const r = await judge.score(trajectory);
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.score, 1);
  assert.equal(r.backend, `command:${process.execPath} ${script}`);

  const broken = new Judge({ backend: { kind: 'command', command: process.execPath, args: ['-e', 'process.stderr.write("quota exceeded"); process.exit(3)'] }, maxBackendRetries: 0, log: () => undefined });
  const b = await broken.score(trajectory);
  assert.ok(!b.ok && /exited with 3: quota exceeded/.test(b.missing), JSON.stringify(b));
  const missing = new Judge({ backend: { kind: 'command', command: '/nonexistent/judge' }, maxBackendRetries: 0, log: () => undefined });
  const m = await missing.score(trajectory);
  assert.ok(!m.ok && /could not be started: ENOENT/.test(m.missing));
  const slow = new Judge({ backend: { kind: 'command', command: process.execPath, args: ['-e', 'setTimeout(() => {}, 10000)'], timeoutMs: 200 }, maxBackendRetries: 0, log: () => undefined });
  const s = await slow.score(trajectory);
  assert.ok(!s.ok && /did not answer within 0.2s/.test(s.missing));
});

test('hot switch via setBackend: HTTP -> command -> HTTP, each taking effect at the next call and logged', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.respond = () => fenced(verdict([0.2, 0.2, 0.2, 0.2]));
    const logs: string[] = [];
    const sw = new JudgeBackendSwitch({ kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, { log: (l) => logs.push(l) });
    const judge = new Judge({ backend: sw });
    assert.equal((await judge.score(trajectory) as { score: number }).score, 0.2);
    assert.equal(srv.calls, 1);

    // A call already running keeps its backend; the switch applies to the next one.
    srv.latencyMs = 300;
    const inFlight = judge.score(trajectory);
    await new Promise((r) => setTimeout(r, 50));
    sw.setBackend({ kind: 'command', command: process.execPath, args: [writeCommandJudge('judge-b.js', [0.9, 0.9, 0.9, 0.9])] }, 'settings');
    const first = await inFlight;
    assert.ok(first.ok && first.score === 0.2 && first.backend.startsWith('openai:'));
    const second = await judge.score(trajectory);
    assert.ok(second.ok && second.score === 0.9 && second.backend.startsWith('command:'), JSON.stringify(second));
    assert.equal(srv.calls, 2);

    srv.latencyMs = 0;
    sw.setBackend({ kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, 'settings');
    assert.equal((await judge.score(trajectory) as { score: number }).score, 0.2);
    assert.equal(srv.calls, 3);
    assert.deepEqual(sw.history.map((h) => h.source), ['initial', 'settings', 'settings']);
    assert.match(logs[1], /switched: openai:m@.* -> command:.*judge-b.js \(settings\)/);
  } finally {
    await srv.close();
  }
});

test('hot switch via the control file: takes effect at the next call; a broken file keeps the backend; removal reverts', async () => {
  const srv = await startOpenAIServer();
  const control = join(scratch, 'judge-backend.json');
  try {
    srv.respond = () => fenced(verdict([0.2, 0.2, 0.2, 0.2]));
    const logs: string[] = [];
    const sw = new JudgeBackendSwitch({ kind: 'openai', baseUrl: srv.baseUrl, model: 'm' }, { controlFile: control, pollMs: 50, log: (l) => logs.push(l) }).watch();
    const judge = new Judge({ backend: sw });
    assert.equal((await judge.score(trajectory) as { score: number }).score, 0.2);

    writeFileSync(control, JSON.stringify({ kind: 'command', command: process.execPath, args: [writeCommandJudge('judge-c.js', [0.6, 0.6, 0.6, 0.6])] }));
    const viaFile = await judge.score(trajectory);
    assert.ok(viaFile.ok && viaFile.score === 0.6, JSON.stringify(viaFile));
    assert.equal(srv.calls, 1);

    writeFileSync(control, '{"kind": "command"');
    const kept = await judge.score(trajectory);
    assert.ok(kept.ok && kept.score === 0.6);
    assert.ok(logs.some((l) => /control file .* ignored, keeping command:/.test(l)), logs.join('\n'));

    unlinkSync(control);
    const reverted = await judge.score(trajectory);
    assert.ok(reverted.ok && reverted.score === 0.2);
    assert.equal(srv.calls, 2);
    assert.deepEqual(sw.history.map((h) => h.source), ['initial', 'control-file', 'control-file removed']);

    // The watcher applies an edit without any judge call, so the log shows the switch when it is made.
    writeFileSync(control, JSON.stringify({ kind: 'openai', baseUrl: srv.baseUrl, model: 'other' }));
    const deadline = Date.now() + 3000;
    while (sw.label !== `openai:other@${srv.baseUrl}` && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(sw.label, `openai:other@${srv.baseUrl}`);
    sw.close();
  } finally {
    await srv.close();
  }
});

test('judgeFailureLine: a configured judge that gave no score is named with its attempts and reason; one not asked is silent', () => {
  const tests = { tests: 0.7, outcomes: [] };
  const http = combineReward(tests, { missing: 'no usable judge answer after 2 attempt(s); last: backend error: The model endpoint http://x/v1 kept failing (4 attempts): HTTP 500: boom' });
  assert.equal(judgeFailureLine(http), 'judge: failed after 2 attempts (HTTP 500) — reward is tests only');
  const malformed = combineReward(tests, { missing: 'no usable judge answer after 3 attempt(s); last: malformed answer: no JSON object' });
  assert.equal(judgeFailureLine(malformed), 'judge: failed after 3 attempts (malformed answer: no JSON object) — reward is tests only');
  assert.equal(judgeFailureLine(combineReward(tests, { missing: 'the judge call was cancelled' })), 'judge: failed (the judge call was cancelled) — reward is tests only');
  assert.equal(judgeFailureLine(combineReward(tests, undefined)), undefined);
  assert.equal(judgeFailureLine(combineReward(tests, undefined, { tests: 1, judge: 0 })), undefined);
});
