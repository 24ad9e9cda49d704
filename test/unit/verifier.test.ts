import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIServer, type ChatRequestRecord, type OpenAIServer, type Reply } from '../helpers/openai-server';
import { MidHarnessVerifier } from '../../src/core/verifier/verifier';
import { winMatrix, winRates } from '../../src/core/verifier/ranking';
import { parseRanking } from '../../src/core/verifier/modes/listwise';
import { parseScore } from '../../src/core/verifier/modes/pointwise';
import { parsePairwise } from '../../src/core/verifier/modes/pairwise';
import { parseDecision } from '../../src/core/verifier/modes/decision-only';
import { stripThink, observationFailed } from '../../src/core/verifier/candidates';
import { createModelPolicy } from '../../src/core/agent/model-policy';
import type { VerifierConfig, VerifierMode } from '../../src/core/verifier/types';
import type { ChatMessage } from '../../src/core/model/types';
import type { Task } from '../../src/core/tasks/model';

const bash = (cmd: string, think = '') => `${think ? `<think>${think}</think>\n` : ''}<bash>\ncmd: ${cmd}\n</bash>`;
const history: ChatMessage[] = [
  { role: 'system', content: 'you are an agent' },
  { role: 'user', content: 'Make the tests in /app pass.' },
  { role: 'assistant', content: '<think>look first</think>\n<bash>\ncmd: ls /app\n</bash>' },
  { role: 'user', content: '<bash_output>\nexit_code: 0\nmain.py test_main.py\n</bash_output>' },
];

/** Which command a rendered candidate runs. */
const cmdOf = (block: string) => /cmd: (.*)/.exec(block)?.[1]?.trim() ?? '';

/** Splits the rendered candidates of a listwise/decision prompt into label → command. */
function listed(user: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /## Candidate ([A-Z])\n([\s\S]*?)(?=\n\n## Candidate |\n\n(?:Rank all|Answer with)|$)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(user)) !== null) out.set(m[1], cmdOf(m[2]));
  return out;
}

/**
 * A scripted verifier model: knows a hidden quality per command and answers each prompt kind in
 * its own format, so label ↔ candidate mapping (and pairwise A/B swapping) is really exercised.
 */
function judge(quality: Record<string, number>, margins: Record<string, 1 | 2 | 3> = {}) {
  return (req: ChatRequestRecord): Reply => {
    const sys = req.messages[0].content;
    const user = req.messages[1].content;
    const q = (cmd: string) => quality[cmd] ?? 0;
    if (sys.includes('ranks every candidate')) {
      const order = [...listed(user)].sort((x, y) => q(y[1]) - q(x[1])).map(([l]) => l);
      return `Candidate ${order[0]} reads the failing test first.\n**RANKING:** ${order.join(' > ')}`;
    }
    if (sys.includes('letter only')) {
      return [...listed(user)].sort((x, y) => q(y[1]) - q(x[1]))[0][0];
    }
    if (sys.includes('ONE candidate')) {
      const cmd = cmdOf(user.split('# Candidate next turn')[1]);
      return `Reasonable.\nSCORE: ${q(cmd)}`;
    }
    if (sys.includes('TWO candidates')) {
      const a = cmdOf(user.split('# Candidate A')[1].split('# Candidate B')[0]);
      const b = cmdOf(user.split('# Candidate B')[1]);
      const winner = q(a) >= q(b) ? 'A' : 'B';
      const margin = margins[[a, b].sort().join('|')] ?? 2;
      return `Comparing.\nWINNER: ${winner}\nMARGIN: ${margin}`;
    }
    return { status: 500, error: { message: 'judge: unknown prompt' } };
  };
}

async function withVerifier(mode: VerifierMode, respond: (r: ChatRequestRecord) => Reply | Promise<Reply>, fn: (v: MidHarnessVerifier, srv: OpenAIServer) => Promise<void>, extra: Partial<VerifierConfig> = {}, opts: { log?: (l: string) => void } = {}) {
  const srv = await startOpenAIServer({ models: ['judge'], respond });
  try {
    const { endpoint, ...rest } = extra;
    const v = new MidHarnessVerifier({ mode, ...rest, endpoint: { model: 'judge', maxRetries: 0, ...endpoint, baseUrl: srv.baseUrl } }, { retryBaseMs: 1, ...opts });
    await fn(v, srv);
  } finally {
    await srv.close();
  }
}

const quality = { 'cat test_main.py': 9, 'pytest -q': 6, 'rm -rf /app': 0, 'echo hi': 3 };
// The best candidate sits third, carries private reasoning, and in pairwise is sometimes shown as B.
const four = [bash('echo hi'), bash('pytest -q'), bash('cat test_main.py', 'SECRET-REASONING'), bash('rm -rf /app')];

for (const [mode, calls] of [['listwise', 1], ['pointwise', 4], ['pairwise', 6], ['decision-only', 1]] as const) {
  test(`${mode}: picks the best candidate with ${calls} call(s), never shows reasoning`, async () => {
    await withVerifier(mode, judge(quality), async (v, srv) => {
      const d = await v.select({ messages: history, candidates: four });
      assert.equal(d.chosen, 2, JSON.stringify(d));
      assert.equal(d.mode, mode);
      assert.equal(d.calls, calls);
      assert.equal(srv.requests.length, calls);
      assert.ok(d.outputTokens > 0);
      assert.ok(d.parallelOutputTokens > 0 && d.parallelOutputTokens <= d.outputTokens);
      if (calls > 1) assert.ok(d.parallelOutputTokens < d.outputTokens, 'parallel calls: longest chain is one answer');
      assert.equal(d.fallback, undefined);
      for (const r of srv.requests) {
        const text = r.messages.map((m) => m.content).join('\n');
        assert.ok(!text.includes('SECRET-REASONING'), 'candidate reasoning leaked to the verifier');
        assert.ok(!text.includes('look first'), 'history reasoning leaked to the verifier');
        assert.ok(text.includes('Make the tests in /app pass.'));
        assert.ok(text.includes('main.py test_main.py'), 'observation history is shown');
        assert.equal(r.body.temperature, 0);
      }
      assert.equal(d.scores.length, 4);
      if (mode !== 'decision-only') assert.ok(d.scores[2] > d.scores[1] && d.scores[1] > d.scores[0] && d.scores[0] > d.scores[3], JSON.stringify(d.scores));
      assert.ok((d.margin ?? 0) > 0);
    });
  });
}

test('margin-weighted win rate: hand-worked cyclic matrix', () => {
  // 0 ≻ 1 decisively (3), 2 ≻ 0 slightly (1), 1 ≻ 2 clearly (2).
  const js = [
    { i: 0, j: 1, winner: 'i' as const, margin: 3 as const },
    { i: 0, j: 2, winner: 'j' as const, margin: 1 as const },
    { i: 1, j: 2, winner: 'i' as const, margin: 2 as const },
  ];
  const m = winMatrix(3, js);
  const close = (row: number[], want: number[]) => row.forEach((x, k) => assert.ok(Math.abs(x - want[k]) < 1e-12, `${row} vs ${want}`));
  close(m[0], [0, 1, 1 / 3]);
  close(m[1], [0, 0, 5 / 6]);
  close(m[2], [2 / 3, 1 / 6, 0]);
  const r = winRates(m, js);
  assert.ok(Math.abs(r[0]! - 2 / 3) < 1e-12);
  assert.ok(Math.abs(r[1]! - 5 / 12) < 1e-12);
  assert.ok(Math.abs(r[2]! - 5 / 12) < 1e-12);
  // A tie splits evenly; an unjudged candidate has no rate.
  const t = winMatrix(3, [{ i: 0, j: 1, winner: 'tie', margin: 2 }]);
  assert.deepEqual(t[0][1], 0.5);
  assert.equal(winRates(t, [{ i: 0, j: 1, winner: 'tie', margin: 2 }])[2], undefined);
});

test('pairwise through the server reproduces the hand-worked matrix and margin', async () => {
  const prefs: Record<string, string> = { 'c0|c1': 'c0', 'c0|c2': 'c2', 'c1|c2': 'c1' };
  const margins: Record<string, number> = { 'c0|c1': 3, 'c0|c2': 1, 'c1|c2': 2 };
  const respond = (req: ChatRequestRecord): Reply => {
    const user = req.messages[1].content;
    const a = cmdOf(user.split('# Candidate A')[1].split('# Candidate B')[0]);
    const b = cmdOf(user.split('# Candidate B')[1]);
    const key = [a, b].sort().join('|');
    return `WINNER: ${prefs[key] === a ? 'A' : 'B'}\nMARGIN: ${margins[key]}`;
  };
  await withVerifier('pairwise', respond, async (v, srv) => {
    const d = await v.select({ messages: history, candidates: [bash('c0'), bash('c1'), bash('c2')] });
    assert.equal(srv.requests.length, 3);
    assert.equal(d.chosen, 0);
    assert.deepEqual(d.scores.map((s) => +s.toFixed(9)), [+(2 / 3).toFixed(9), +(5 / 12).toFixed(9), +(5 / 12).toFixed(9)]);
    assert.ok(Math.abs((d.margin ?? 0) - 0.25) < 1e-9);
    assert.equal(d.matrix?.[0][1], 1);
    assert.ok(Math.abs(d.matrix![2][0] - 2 / 3) < 1e-12);
  });
});

test('pre-filters: unparseable and repeat-of-failed ranked last, duplicates compared once', async () => {
  const failedHistory: ChatMessage[] = [
    ...history.slice(0, 2),
    { role: 'assistant', content: bash('python main.py') },
    { role: 'user', content: '<bash_output>\nexit_code: 1\nTraceback: NameError\n</bash_output>' },
  ];
  const cands = [
    '<bash>\ncmd: [unclosed\n</bash>',
    bash('pytest -q'),
    '<bash>\ncmd: "pytest -q"\n</bash>',
    bash('python main.py', 'try again'),
    bash('cat test_main.py'),
  ];
  await withVerifier('pairwise', judge(quality), async (v, srv) => {
    const d = await v.select({ messages: failedHistory, candidates: cands });
    assert.equal(srv.requests.length, 1, 'only pytest vs cat is worth a call');
    assert.equal(d.chosen, 4);
    assert.equal(d.scores[0], -1);
    assert.equal(d.scores[3], -1);
    assert.equal(d.scores[2], d.scores[1]);
  });
  // With a single viable candidate no call is made at all.
  await withVerifier('listwise', judge(quality), async (v, srv) => {
    const d = await v.select({ messages: failedHistory, candidates: [cands[0], cands[3], cands[1], cands[2]] });
    assert.equal(srv.requests.length, 0);
    assert.equal(d.chosen, 2);
    assert.equal(d.calls, 0);
  });
  assert.ok(observationFailed('<bash_output>\nexit_code: 2\n</bash_output>'));
  assert.ok(!observationFailed('<bash_output>\nexit_code: 0\n</bash_output>'));
  assert.equal(stripThink('<think>a</think>x<think>unclosed'), 'x');
});

test('malformed verifier answers fall back to the first parseable candidate, never throw', async () => {
  const cands = ['not an action', bash('echo hi'), bash('cat test_main.py')];
  const cases: Array<[VerifierMode, Reply]> = [
    ['listwise', 'They all look fine to me.'],
    ['pairwise', 'I cannot decide.'],
    ['pointwise', 'Good.'],
    ['decision-only', 'Hmm, maybe'],
    ['listwise', { malformed: true }],
    ['pairwise', { status: 500 }],
    ['pointwise', { emptyChoices: true }],
    ['decision-only', { drop: true }],
  ];
  for (const [mode, reply] of cases) {
    await withVerifier(mode, () => reply, async (v) => {
      const d = await v.select({ messages: history, candidates: cands });
      assert.equal(d.chosen, 1, `${mode} ${JSON.stringify(reply)}`);
      assert.ok(d.fallback, `${mode}: fallback recorded`);
      assert.match(d.fallback!, /candidate 1/);
      assert.equal(v.stats.fallbacks, 1);
    });
  }
});

test('a failed verifier endpoint (unreachable) is recorded and falls back', async () => {
  const v = new MidHarnessVerifier({ mode: 'pairwise', endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'judge', maxRetries: 0 } });
  const d = await v.select({ messages: history, candidates: [bash('a'), bash('b')] });
  assert.equal(d.chosen, 0);
  assert.match(d.fallback!, /verifier call failed.*127\.0\.0\.1:9/);
  assert.equal(v.stats.failedCalls, 1);
});

test('partial pointwise failures: unscored candidates cannot win', async () => {
  let k = 0;
  await withVerifier('pointwise', (req) => (k++ === 0 ? 'no score here' : judge({ 'echo hi': 4, 'pytest -q': 2 })(req)), async (v) => {
    const d = await v.select({ messages: history, candidates: [bash('cat test_main.py'), bash('echo hi'), bash('pytest -q')] });
    assert.equal(d.fallback, undefined);
    assert.equal(d.chosen, 1);
  }, { concurrency: 1 });
});

test('token budget: steps down pairwise → listwise → decision-only → first parseable, never over budget, and says so', async () => {
  const logs: string[] = [];
  await withVerifier('pairwise', judge(quality), async (v) => {
    const modes: string[] = [];
    for (let step = 0; step < 12; step++) {
      const d = await v.select({ messages: history, candidates: four });
      modes.push(d.mode);
      if (d.mode !== 'pairwise') assert.equal(d.degradedFrom, 'pairwise');
      if (d.mode === 'none') {
        assert.equal(d.calls, 0);
        assert.equal(d.chosen, 0);
        assert.match(d.fallback!, /budget/);
      } else assert.equal(d.chosen, 2);
      assert.ok(v.spentTokens <= 2500, `spent ${v.spentTokens}`);
    }
    const rank = { pairwise: 0, listwise: 1, 'decision-only': 2, none: 3 } as Record<string, number>;
    for (let i = 1; i < modes.length; i++) assert.ok(rank[modes[i]] >= rank[modes[i - 1]], modes.join(','));
    assert.ok(!modes.includes('pairwise'), 'pairwise (6 calls) cannot fit a 2500-token budget');
    for (const m of ['listwise', 'decision-only', 'none']) assert.ok(modes.includes(m), `${m} missing in ${modes.join(',')}`);
    assert.equal(v.stats.degradedSteps, 12);
    assert.deepEqual(logs.map((l) => /→ (\S+)/.exec(l)?.[1]), ['listwise', 'decision-only', 'first'], logs.join('\n'));
  }, { tokenBudget: 2500 }, { log: (l) => logs.push(l) });
});

test('model policy: N from the generator, the verifier on its own endpoint picks one', async () => {
  const gen = await startOpenAIServer({ models: ['gen'] });
  const ver = await startOpenAIServer({ models: ['judge'], respond: judge(quality) });
  try {
    gen.respond = () => four;
    const task = { instruction: 'Make the tests in /app pass.' } as Task;
    const policy = createModelPolicy({ baseUrl: gen.baseUrl, model: 'gen' }, { n: 4, verifier: { mode: 'listwise', endpoint: { baseUrl: ver.baseUrl, model: 'judge' } } });
    const turn = await policy.next({ task, messages: history, step: 1 });
    assert.equal(turn.candidates.length, 4);
    assert.equal(turn.chosen, 2);
    assert.equal(turn.decision?.mode, 'listwise');
    assert.equal(gen.requests.length, 1);
    assert.equal(ver.requests.length, 1);
    assert.ok(turn.candidates.every((c) => c.parses));
    assert.ok(turn.usage.completionTokens > 0);
    assert.match(policy.description, /gen × 4 \+ listwise verifier \(judge\)/);

    const plain = createModelPolicy({ baseUrl: gen.baseUrl, model: 'gen' });
    gen.respond = () => bash('ls');
    const one = await plain.next({ task, messages: history, step: 1 });
    assert.deepEqual([one.candidates.length, one.chosen, one.decision], [1, 0, undefined]);

    gen.respond = () => ['oops', bash('ls'), bash('pwd')];
    const noVerifier = await createModelPolicy({ baseUrl: gen.baseUrl, model: 'gen' }, { n: 3 }).next({ task, messages: history, step: 1 });
    assert.equal(noVerifier.chosen, 1);
    assert.equal(noVerifier.decision?.mode, 'none');
  } finally {
    await gen.close();
    await ver.close();
  }
});

test('answer parsers: tolerant of decoration, strict about labels', () => {
  assert.deepEqual(parseRanking('blah\n**Ranking:** C > a > B', ['A', 'B', 'C']), ['C', 'A', 'B']);
  assert.deepEqual(parseRanking('RANKING: B', ['A', 'B', 'C']), ['B', 'A', 'C']);
  assert.deepEqual(parseRanking('{"ranking": ["Candidate B", "A"]}', ['A', 'B']), ['B', 'A']);
  assert.equal(parseRanking('RANKING: Z > Q', ['A', 'B']), undefined);
  assert.equal(parseRanking('all good', ['A', 'B']), undefined);
  assert.equal(parseScore('first SCORE: 3 then\nScore: 8/10'), 8);
  assert.equal(parseScore('SCORE: 42'), 10);
  assert.equal(parseScore('{"score": 7}'), 7);
  assert.equal(parseScore('seven'), undefined);
  assert.deepEqual(parsePairwise('**Winner:** Candidate B\nMargin: 3'), { winner: 'B', margin: 3 });
  assert.deepEqual(parsePairwise('WINNER: A'), { winner: 'A', margin: 2 });
  assert.deepEqual(parsePairwise('WINNER: tie'), { winner: 'tie', margin: 2 });
  assert.deepEqual(parsePairwise('{"winner": "B", "margin": 1}'), { winner: 'B', margin: 1 });
  assert.equal(parsePairwise('WINNER: C'), undefined);
  assert.equal(parseDecision('B', ['A', 'B']), 'B');
  assert.equal(parseDecision(' c.', ['A', 'B', 'C']), 'C');
  assert.equal(parseDecision('Answer: B', ['A', 'B']), 'B');
  assert.equal(parseDecision('D', ['A', 'B']), undefined);
  assert.equal(parseDecision('A or B', ['A', 'B']), undefined);
  assert.equal(parseDecision('B. It checks the test first.', ['A', 'B']), 'B');
});

test('pairwise with N=8 distinct candidates makes 28 parallel calls', async () => {
  const q: Record<string, number> = {};
  const eight = Array.from({ length: 8 }, (_, i) => { q[`step${i}`] = i === 5 ? 10 : i; return bash(`step${i}`); });
  let inFlight = 0;
  let maxInFlight = 0;
  const slowJudge = async (req: ChatRequestRecord) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((r) => setTimeout(r, 300));
    inFlight--;
    return judge(q)(req);
  };
  await withVerifier('pairwise', slowJudge, async (v, srv) => {
    const d = await v.select({ messages: history, candidates: eight });
    assert.equal(d.calls, 28);
    assert.equal(srv.requests.length, 28);
    assert.equal(d.chosen, 5);
    assert.ok(maxInFlight >= 20, `pairwise calls must run in parallel (max ${maxInFlight} in flight)`);
    assert.equal(d.matrix?.length, 8);
  });
});

test('a verifier defect (missing prompt version) falls back instead of crashing', async () => {
  await withVerifier('listwise', judge(quality), async (v, srv) => {
    const d = await v.select({ messages: history, candidates: ['junk', ...four] });
    assert.equal(d.chosen, 1);
    assert.match(d.fallback!, /verifier error.*verifier-listwise-v999\.md/);
    assert.equal(srv.requests.length, 0);
  }, { promptVersion: 'v999' });
});

test('history shown to the verifier is bounded by its context window, newest kept', async () => {
  const long: ChatMessage[] = [...history];
  for (let k = 0; k < 30; k++) long.push({ role: 'assistant', content: bash(`cat part${k}`) }, { role: 'user', content: `<bash_output>\n${`line ${k} `.repeat(300)}\n</bash_output>` });
  await withVerifier('listwise', judge(quality), async (v, srv) => {
    const d = await v.select({ messages: long, candidates: four });
    assert.equal(d.chosen, 2);
    const user = srv.requests[0].messages[1].content;
    assert.ok(user.length < 4000 * 4 * 0.5 + 3000, `verifier prompt too long: ${user.length}`);
    assert.match(user, /earlier history block\(s\) left out/);
    assert.match(user, /cat part29/);
    assert.ok(!user.includes('cat part0\n'));
  }, { endpoint: { baseUrl: '', model: 'judge', maxRetries: 0, contextTokens: 4000 } });
});
