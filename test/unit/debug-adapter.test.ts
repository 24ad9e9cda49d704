import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { syntheticTrajectory } from '../helpers/trajectory-fixture';
import { startAdapterServer, type AdapterServer } from '../helpers/adapter-server';

// The adapter runs in this process behind a socket, as VS Code's inline adapter runs it in the extension host.
let server: AdapterServer;
let port: number;
let dir: string;
let trajectory: string;
let dc: DebugClient;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tbrl-dbg-'));
  trajectory = join(dir, 'trajectory.jsonl');
  writeFileSync(trajectory, syntheticTrajectory(10));
  server = await startAdapterServer();
  port = server.port;
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  dc = new DebugClient('node', 'unused', 'tbrl');
  await dc.start(port);
});
afterEach(async () => {
  await dc.stop();
});

async function launch(args: Record<string, unknown>, fbps: string[] = []): Promise<DebugProtocol.StoppedEvent> {
  const stopped = dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await dc.initializeRequest();
  await dc.launchRequest({ trajectory, ...args } as DebugProtocol.LaunchRequestArguments);
  if (fbps.length) await dc.setFunctionBreakpointsRequest({ breakpoints: fbps.map((name) => ({ name })) });
  await dc.configurationDoneRequest();
  return stopped;
}

async function top(): Promise<{ index: number; name: string; total: number; frameId: number }> {
  const st = await dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
  const f = st.body.stackFrames[0];
  return { index: f.id - 1, name: f.name, total: st.body.totalFrames ?? -1, frameId: f.id };
}

async function expectStop(action: () => Promise<unknown>): Promise<DebugProtocol.StoppedEvent> {
  const stopped = dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await action();
  return stopped;
}

test('capabilities include step back and function breakpoints', async () => {
  const init = await dc.initializeRequest();
  assert.equal(init.body?.supportsStepBack, true);
  assert.equal(init.body?.supportsFunctionBreakpoints, true);
});

test('replay stops on entry at step 0; step, step back and reverse continue move through the steps', async () => {
  const entry = await launch({});
  assert.equal(entry.body.reason, 'entry');
  let t = await top();
  assert.equal(t.index, 0);
  assert.equal(t.total, 1);
  assert.match(t.name, /^#0 bash "echo step 0/);

  await expectStop(() => dc.nextRequest({ threadId: 1 }));
  await expectStop(() => dc.nextRequest({ threadId: 1 }));
  t = await top();
  assert.equal(t.index, 2);
  assert.equal(t.total, 3, 'the stack holds the steps so far, newest first');
  const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames.map((f) => f.id - 1);
  assert.deepEqual(frames, [2, 1, 0]);

  await expectStop(() => dc.stepBackRequest({ threadId: 1 }));
  assert.equal((await top()).index, 1);
  assert.match((await top()).name, /file\.edit/);

  await expectStop(() => dc.nextRequest({ threadId: 1 }));
  await expectStop(() => dc.nextRequest({ threadId: 1 }));
  const back = await expectStop(() => dc.send('reverseContinue', { threadId: 1 }));
  assert.equal(back.body.reason, 'entry', 'no breakpoints: reverse continue runs back to the start');
  assert.equal((await top()).index, 0);
});

test('function breakpoints: action kind, command regex, low margin, error and Φ drop', async () => {
  await launch({}, ['file.edit']);
  let ev = await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.equal(ev.body.reason, 'function breakpoint');
  assert.equal((await top()).index, 1);
  ev = await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.equal((await top()).index, 4, 'file.edit steps are 1, 4, 7');

  const set = await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: '/pytest/' }, { name: 'margin<0.1' }, { name: 'bogus breakpoint!' }] });
  assert.deepEqual(set.body.breakpoints.map((b) => b.verified), [true, true, false]);
  assert.match(set.body.breakpoints[2].message ?? '', /Unrecognised breakpoint .*margin<0\.2/);
  await expectStop(() => dc.send('reverseContinue', { threadId: 1 }));
  assert.equal((await top()).index, 3, 'reverse continue from step 4 stops at the pytest command of step 3');
  await expectStop(() => dc.send('reverseContinue', { threadId: 1 }));
  assert.equal((await top()).index, 0, 'nothing before step 3: back to the start');
  await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.equal((await top()).index, 3);
  await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.equal((await top()).index, 5, 'step 5 has margin 0.05');

  await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'phi-drop' }] });
  await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.equal((await top()).index, 6);

  await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'error' }] });
  await expectStop(() => dc.send('reverseContinue', { threadId: 1 }));
  assert.equal((await top()).index, 3, 'step 3 exited 2');
});

test('launch breakOn and stopOnEntry false run to the first hit; continue past the last hit ends at the last step, then terminates', async () => {
  const ev = await launch({ stopOnEntry: false, breakOn: ['phi-drop'] });
  assert.equal(ev.body.reason, 'function breakpoint');
  assert.equal((await top()).index, 6);
  const end = await expectStop(() => dc.continueRequest({ threadId: 1 }));
  assert.match(end.body.description ?? '', /end of run: reward 0\.750/);
  assert.equal((await top()).index, 9);
  const terminated = dc.waitForEvent('terminated');
  await dc.continueRequest({ threadId: 1 });
  await terminated;
});

test('variables show the step, candidates with scores and margin, todos, files changed, reward and DepGPO credit', async () => {
  await launch({ stopOnEntry: false, breakOn: ['/pytest/'] });
  const { frameId } = await top();
  const scopes = (await dc.scopesRequest({ frameId })).body.scopes;
  assert.deepEqual(scopes.map((s) => s.name), ['Step', 'Candidates', 'Todos & scratchpad', 'Files changed', 'Reward & credit']);
  const vars = async (ref: number) => Object.fromEntries((await dc.variablesRequest({ variablesReference: ref })).body.variables.map((v) => [v.name, v]));

  const step = await vars(scopes[0].variablesReference);
  assert.equal(step.index.value, '3');
  assert.equal(step.exitCode.value, '2');
  assert.match(step.observation.value, /assert 1 == 2/);
  assert.equal(step.durationMs.value, '103');
  assert.match(step.tokens.value, /1003 prompt \+ 30 completion/);
  const obsLines = await dc.variablesRequest({ variablesReference: step.observation.variablesReference });
  assert.deepEqual(obsLines.body.variables.map((v) => v.value), ['E   assert 1 == 2', '1 failed']);

  const cands = await vars(scopes[1].variablesReference);
  assert.match(cands.verifier.value, /listwise, chose 0, margin 0\.500/);
  assert.match(cands['0 (chosen)'].value, /^score 0\.900 · /);
  assert.match(cands['1'].value, /^score 0\.400 · /);

  const state = await vars(scopes[2].variablesReference);
  assert.equal(state.todos.value, '1/2 done');
  const files = await vars(scopes[3].variablesReference);
  assert.deepEqual(Object.keys(files), ['/app/s3.txt']);
  const run = await vars(scopes[4].variablesReference);
  assert.equal(run.reward.value, 'total 0.750');
  assert.equal(run['depgpo.factor'].value, '1.5');
  const outcomes = await vars((await vars(run.reward.variablesReference)).testOutcomes.variablesReference);
  assert.equal(outcomes.test_b.value, 'failed (weight 1)');
});

test('the current turn is a virtual source with its observation; selecting a step jumps there', async () => {
  await launch({});
  const st = await dc.stackTraceRequest({ threadId: 1 });
  const ref = st.body.stackFrames[0].source!.sourceReference!;
  const src = await dc.sourceRequest({ sourceReference: ref, source: { sourceReference: ref } });
  assert.match(src.body.content, /^<bash>\ncmd: echo step 0/);
  assert.match(src.body.content, /# ── observation ──\n# ok 0/);

  const ev = await expectStop(() => dc.customRequest('tbrl/selectStep', { step: 7 }));
  assert.equal(ev.body.reason, 'goto');
  assert.equal((await top()).index, 7);
  await assert.rejects(dc.customRequest('tbrl/selectStep', { step: 99 }), /Step 99 is outside this run \(0\.\.9\)/);
});

test('a replay has no waiting turn to decide: tbrl/pendingTurn answers null, tbrl/decide refuses, tbrl/stopped names the trajectory', async () => {
  const stoppedEvent = dc.waitForEvent('tbrl/stopped');
  await launch({});
  assert.deepEqual((await stoppedEvent).body, { step: 0, pending: false, trajectory });
  assert.deepEqual((await dc.customRequest('tbrl/pendingTurn')).body, { pending: null });
  await assert.rejects(dc.customRequest('tbrl/decide', { action: 'accept' }), /No turn is waiting/);
});

test('a missing trajectory is reported with its cause, not a crash', async () => {
  await dc.initializeRequest();
  await assert.rejects(dc.launchRequest({ trajectory: join(dir, 'nope.jsonl') } as DebugProtocol.LaunchRequestArguments), /Cannot read the trajectory .*nope\.jsonl/);
});

test('a launch configuration without trajectory or task says what to add', async () => {
  await dc.initializeRequest();
  await assert.rejects(dc.launchRequest({} as DebugProtocol.LaunchRequestArguments), /names neither a trajectory nor a task/);
});
