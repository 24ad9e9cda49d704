/**
 * Deciding a waiting turn in the `tbrl` debugger on real Docker, over DAP: the model (the local
 * OpenAI-compatible server) offers three candidates and a pointwise verifier picks candidate 0;
 * `tbrl/pendingTurn` shows them while the run waits, a human pick of candidate 2 is what runs and
 * becomes preference labels, and with stopAfter the run waits again before the next turn.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { readTrajectory } from '../../src/core/trajectory/reader';
import type { PendingTurnInfo } from '../../src/core/debug/turn';
import { startOpenAIServer } from '../helpers/openai-server';
import { CANDIDATES, SECOND, scriptedCandidates } from '../helpers/scripted-candidates';
import { startAdapterServer, type AdapterServer } from '../helpers/adapter-server';

let server: AdapterServer;
let runsDir: string;

before(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'tbrl-decide-'));
  server = await startAdapterServer();
});

after(() => {
  server.close();
  rmSync(runsDir, { recursive: true, force: true });
});

test('tbrl/pendingTurn shows the waiting candidates and verifier scores; a pick of another candidate runs it and is labelled', { timeout: 180_000 }, async () => {
  const model = scriptedCandidates();
  const srv = await startOpenAIServer({ models: ['m'], respond: model });
  const dc = new DebugClient('node', 'unused', 'tbrl');
  dc.defaultTimeout = 30_000;
  await dc.start(server.port);
  const stopped = (): Promise<DebugProtocol.StoppedEvent> => dc.waitForEvent('stopped', 120_000) as Promise<DebugProtocol.StoppedEvent>;
  try {
    await dc.initializeRequest();
    let next = stopped();
    const stoppedEvent = dc.waitForEvent('tbrl/stopped', 120_000);
    await dc.launchRequest({ task: resolve('examples/hello-world'), baseUrl: srv.baseUrl, model: 'm', n: 3, verifier: 'pointwise', runsDir, stopOnEntry: true, skipReward: true, checkpoint: false } as DebugProtocol.LaunchRequestArguments);
    await dc.configurationDoneRequest();
    assert.equal((await next).body.reason, 'entry');
    const state = (await dc.customRequest('tbrl/state')).body;
    assert.deepEqual((await stoppedEvent).body, { step: 0, pending: true, trajectory: state.trajectory }, 'a live stop names the trajectory the run writes');

    const waiting = (await dc.customRequest('tbrl/pendingTurn')).body.pending as PendingTurnInfo;
    assert.equal(waiting.step, 0);
    assert.deepEqual(waiting.candidates.map((c) => c.text), CANDIDATES);
    assert.equal(waiting.chosen, 0);
    assert.equal(waiting.text, CANDIDATES[0]);
    assert.equal(waiting.decision?.mode, 'pointwise');
    assert.deepEqual(waiting.decision?.scores, [0.9, 0.5, 0.2]);
    assert.equal(model.verifierCalls(), 3, 'one pointwise call per candidate');

    next = stopped();
    const continued = dc.waitForEvent('continued', 10_000);
    const decided = (await dc.customRequest('tbrl/decide', { action: 'pick', candidate: 2, stopAfter: true })).body;
    assert.equal(decided.labels, 2, 'candidate 2 preferred over each of the other two');
    assert.equal((await continued).body.threadId, 1, 'VS Code is told the thread runs again, so it drops the old stop');
    assert.equal((await next).body.reason, 'step');
    const again = (await dc.customRequest('tbrl/pendingTurn')).body.pending as PendingTurnInfo;
    assert.equal(again.step, 1, 'stopAfter: waiting before the next turn');
    assert.equal(again.text, SECOND);

    next = stopped();
    await dc.customRequest('tbrl/decide', { action: 'stop' });
    assert.match((await next).body.description ?? '', /run ended: cancelled/);
    assert.deepEqual((await dc.customRequest('tbrl/pendingTurn')).body, { pending: null });

    const t = await readTrajectory(state.trajectory);
    assert.equal(t.steps.length, 1);
    assert.equal(t.steps[0].chosenText, CANDIDATES[2]);
    assert.match(t.steps[0].actions[0].observation, /cand-two/);
    assert.equal(t.steps[0].decision?.chosen, 0, 'the verifier decision is kept next to what the human ran');
    const labels = readFileSync(join(state.trajectory, '..', 'labels.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(labels.map((l) => [l.source, l.chosenIndex, l.rejectedIndex, l.human?.action]), [['human', 2, 0, 'pick'], ['human', 2, 1, 'pick']]);
    assert.equal(labels[0].chosen, CANDIDATES[2]);
  } finally {
    await dc.stop();
    await srv.close();
  }
});
