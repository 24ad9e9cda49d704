import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAIServer } from '../helpers/openai-server';
import { runAttempts, type AttemptResult } from '../../src/core/verifier/attempts';
import { TrajectoryWriter } from '../../src/core/trajectory/writer';
import { TRAJECTORY_SCHEMA } from '../../src/core/trajectory/schema';
import { TbrlError } from '../../src/core/errors';

function writeRun(dir: string, name: string, cmd: string, exitCode: number, reward: number): string {
  const path = join(dir, name, 'trajectory.jsonl');
  const w = TrajectoryWriter.create(path, {
    type: 'header', schema: TRAJECTORY_SCHEMA, runId: name, startedAt: new Date(0).toISOString(),
    task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'Make the tests pass.' },
    policy: { kind: 'model' }, config: {}, versions: { tbrl: '0.1.0', node: process.version },
  });
  w.appendStep({
    type: 'step', index: 0, startedAt: new Date(0).toISOString(), durationMs: 3, candidates: [{ text: cmd, parses: true }], chosenText: cmd,
    actions: [{ kind: 'bash', input: { cmd }, observation: '', ok: exitCode === 0, exitCode, durationMs: 3 }],
    parseErrors: [], usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [],
  });
  w.writeFooter({
    type: 'footer', endedAt: new Date(0).toISOString(), endReason: 'finished', steps: 1,
    reward: { tests: reward, weights: { tests: 1, judge: 0 }, total: reward, testOutcomes: [{ name: 'test_a', status: reward === 1 ? 'passed' : 'failed', weight: 1 }] },
    usage: { promptTokens: 1, completionTokens: 1, verifierCalls: 0, verifierOutputTokens: 0 },
  });
  return path;
}

test('best-of-T runs T independent attempts and keeps the highest reward', async () => {
  const seen: Array<[number, string | undefined]> = [];
  const rewards = [0.2, 0.9, 0.5];
  const out = await runAttempts(async (k, prev) => {
    seen.push([k, prev]);
    return { trajectoryPath: `/runs/${k}`, reward: rewards[k - 1] };
  }, { attempts: 3, select: 'best' });
  assert.deepEqual(seen, [[1, undefined], [2, undefined], [3, undefined]]);
  assert.equal(out.selected, 1);
  assert.match(out.reason, /highest reward 0.9/);
});

test('refine passes a summary of the previous attempt and stops at the target reward', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-attempts-'));
  try {
    const runs: Record<number, AttemptResult> = {
      1: { trajectoryPath: writeRun(dir, 'a1', 'python fix.py --wrong', 1, 0.25), reward: 0.25 },
      2: { trajectoryPath: writeRun(dir, 'a2', 'python fix.py', 0, 1), reward: 1 },
      3: { trajectoryPath: '/never', reward: 0 },
    };
    const prevs: Array<string | undefined> = [];
    const out = await runAttempts(async (k, prev) => {
      prevs.push(prev);
      return runs[k];
    }, { attempts: 3, select: 'refine' });
    assert.equal(out.attempts.length, 2, 'stopped once reward 1 was reached');
    assert.equal(out.selected, 1);
    assert.equal(prevs[0], undefined);
    assert.match(prevs[1]!, /python fix\.py --wrong/);
    assert.match(prevs[1]!, /exit 1/);
    assert.match(prevs[1]!, /Reward 0\.25/);
    assert.match(prevs[1]!, /Failing tests: test_a/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a crashing attempt is recorded and the others still count', async () => {
  const out = await runAttempts(async (k) => {
    if (k === 1) throw new Error('container died');
    return { trajectoryPath: `/runs/${k}`, reward: 0.5 };
  }, { attempts: 2, select: 'best' });
  assert.equal(out.attempts[0].error, 'container died');
  assert.equal(out.selected, 1);
  const refine = await runAttempts(async (k, prev) => {
    if (k === 1) throw new Error('model outage');
    assert.match(prev!, /crashed before finishing: model outage/);
    return { trajectoryPath: '/r', reward: 0 };
  }, { attempts: 2, select: 'refine', summarize: async () => 'unused' });
  assert.equal(refine.selected, 1);
});

test('best-of-T breaks ties with the trajectory verifier; a broken verifier keeps the earliest', async () => {
  const srv = await startOpenAIServer({ respond: () => 'Attempt C verified its work.\nRANKING: C > A > B' });
  try {
    const opts = { attempts: 3, select: 'best' as const, verifier: { baseUrl: srv.baseUrl, model: 'j' }, summarize: async (r: AttemptResult) => `summary of ${r.trajectoryPath}` };
    const out = await runAttempts(async (k) => ({ trajectoryPath: `/runs/${k}`, reward: 1 }), opts);
    assert.equal(out.selected, 2);
    assert.match(out.reason, /verifier chose among 3 tied/);
    assert.match(srv.requests[0].messages[1].content, /## Attempt C\nsummary of \/runs\/3/);
    srv.respond = () => 'no idea';
    const fallback = await runAttempts(async (k) => ({ trajectoryPath: `/runs/${k}`, reward: 1 }), opts);
    assert.equal(fallback.selected, 0);
    assert.match(fallback.reason, /earliest of 3 tied/);
  } finally {
    await srv.close();
  }
});

test('bad attempts/select are clear errors', async () => {
  await assert.rejects(runAttempts(async () => ({ trajectoryPath: '', reward: 0 }), { attempts: 0, select: 'best' }), (e: TbrlError) => e.code === 'attempts-config');
  await assert.rejects(runAttempts(async () => ({ trajectoryPath: '', reward: 0 }), { attempts: 2, select: 'both' as never }), (e: TbrlError) => e.code === 'attempts-config' && /refine/.test(e.message));
});
