import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { removeRunContainers, runIdsIn } from './session';
import { startAdapterServer, type AdapterServer } from '../helpers/adapter-server';

// A live run through the debug adapter on real Docker (the oracle plays the agent): the run pauses
// inside the agent loop before each turn, a human edit replaces the turn and becomes a preference
// label, stepping stops before the next turn, and the finished run stays open for inspection.
let server: AdapterServer;
let runsDir: string;

before(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'tbrl-live-dbg-'));
  server = await startAdapterServer();
});

after(() => {
  server.close();
  removeRunContainers(runIdsIn(runsDir));
  rmSync(runsDir, { recursive: true, force: true });
});

test('live: stop before the first turn, a human edit runs instead and is labelled, next stops before the following turn', { timeout: 180_000 }, async () => {
  const dc = new DebugClient('node', 'unused', 'tbrl');
  await dc.start(server.port);
  try {
    const stopped = (): Promise<DebugProtocol.StoppedEvent> => dc.waitForEvent('stopped', 120_000) as Promise<DebugProtocol.StoppedEvent>;
    let next = stopped();
    await dc.initializeRequest();
    // View-only step back, so the edited step stays in this one run (the default, restoring from a checkpoint, is debug-restart-frame.test.ts).
    await dc.launchRequest({ task: resolve('examples/hello-world'), policy: 'oracle', runsDir, stopOnEntry: true, skipReward: false, stepBackRestores: false } as DebugProtocol.LaunchRequestArguments);
    await dc.configurationDoneRequest();
    const entry = await next;
    assert.equal(entry.body.reason, 'entry');
    const state = (await dc.customRequest('tbrl/state')).body;
    assert.equal(state.pending, 0);
    assert.equal(state.live, true);
    const top = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0];
    assert.match(top.name, /^#0 ▶ bash \(not run yet\)/);
    const src = await dc.sourceRequest({ sourceReference: top.source!.sourceReference!, source: top.source });
    const original = src.body.content.split('\n# ── not run yet ──')[0];
    assert.match(original, /<bash>/);

    await assert.rejects(dc.customRequest('tbrl/decide', { action: 'pick', candidate: 5 }), /No candidate 5: this turn has 1 \(0\.\.0\)/);
    const edited = '<bash>\ncmd: echo edited-by-human > /tmp/human.txt\n</bash>';
    next = stopped();
    const decided = await dc.customRequest('tbrl/decide', { action: 'edit', text: edited, stopAfter: true });
    assert.equal(decided.body.labels, 1, 'edited vs the one candidate: one preference label');
    const before1 = await next;
    assert.equal(before1.body.reason, 'step', 'stopAfter: the run stops before the next turn');
    const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames;
    assert.match(frames[0].name, /^#1 ▶ .*not run yet/);
    assert.match(frames[1].name, /^#0 bash "echo edited-by-human/);

    // Step back while live (stepBackRestores: false) shows the recorded step; continue runs the rest.
    next = stopped();
    await dc.stepBackRequest({ threadId: 1 });
    await next;
    assert.match((await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0].name, /^#0 bash "echo edited-by-human/);
    next = stopped();
    await dc.continueRequest({ threadId: 1 });
    const end = await next;
    assert.match(end.body.description ?? '', /run ended: finished, reward 1\.000/);

    const [run] = readdirSync(runsDir);
    const lines = readFileSync(join(runsDir, run, 'trajectory.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const step0 = lines.find((l) => l.type === 'step' && l.index === 0);
    assert.equal(step0.chosenText, edited);
    assert.equal(step0.human?.action, 'edit');
    const labels = readFileSync(join(runsDir, run, 'labels.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(labels.length, 1);
    assert.equal(labels[0].source, 'human');
    assert.equal(labels[0].chosenIndex, 'edited');
    assert.match(labels[0].chosen, /edited-by-human/);
    assert.equal(labels[0].rejected.trim(), original.trim());
  } finally {
    await dc.stop();
  }
});
