/**
 * Restart Frame in the `tbrl` debugger on real Docker: a live run (the model through the local
 * OpenAI-compatible server) writes /tmp/a at step 0 and /tmp/b at step 1; restarting the frame of
 * step 0 forks a new live run in the same session from step 0's checkpoint, which stops before
 * step 1 and then sees /tmp/a but not /tmp/b; the session removes its checkpoints when it ends.
 * Live step back and reverse continue restore the container the same way by default.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import Docker from 'dockerode';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { startOpenAIServer } from '../helpers/openai-server';
import { startAdapterServer, type AdapterServer } from '../helpers/adapter-server';

let server: AdapterServer;
let runsDir: string;
const docker = new Docker();

before(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'tbrl-restart-frame-'));
  server = await startAdapterServer();
});

after(() => {
  server.close();
  rmSync(runsDir, { recursive: true, force: true });
});

const containersOf = async (runId: string): Promise<number> => (await docker.listContainers({ all: true, filters: { label: [`dev.tbrl.run=${runId}`] } })).length;
const checkpointsOf = async (runId: string): Promise<number> => (await docker.listImages({ all: true, filters: { label: [`dev.tbrl.run=${runId}`, 'dev.tbrl.kind=checkpoint'] } })).length;

test('restart frame forks a live run from that step: forkedFrom set, state of that step, checkpoints removed at the end', { timeout: 120_000 }, async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  srv.enqueue(
    '<bash>\ncmd: echo a > /tmp/a && mkdir -p /tmp/w0 && cd /tmp/w0\n</bash>',
    '<bash>\ncmd: echo b > /tmp/b && cd /\n</bash>',
    '<finish>\nmessage: done\n</finish>',
  );
  const dc = new DebugClient('node', 'unused', 'tbrl');
  dc.defaultTimeout = 30_000;
  await dc.start(server.port);
  const stopped = (): Promise<DebugProtocol.StoppedEvent> => dc.waitForEvent('stopped', 60_000) as Promise<DebugProtocol.StoppedEvent>;
  let sourceRunId: string | undefined;
  let forkRunId: string | undefined;
  try {
    const init = await dc.initializeRequest();
    assert.equal(init.body?.supportsRestartFrame, true);
    let next = stopped();
    // No "checkpoint" attribute: live runs from the editor checkpoint by default.
    await dc.launchRequest({ task: resolve('examples/hello-world'), baseUrl: srv.baseUrl, model: 'm', runsDir, stopOnEntry: false, skipReward: true } as DebugProtocol.LaunchRequestArguments);
    await dc.configurationDoneRequest();
    const end = await next;
    assert.match(end.body.description ?? '', /run ended: finished/);
    const first = (await dc.customRequest('tbrl/state')).body;
    const source = await readTrajectory(first.trajectory);
    sourceRunId = source.header.runId;
    assert.equal(source.steps.length, 3);
    assert.ok(source.steps[0].checkpoint, 'step 0 was checkpointed without asking');

    // A frame that has no checkpoint cannot be restarted (the turn waiting to run has none).
    await assert.rejects(dc.restartFrameRequest({ frameId: 99 }), /no step 98/);

    srv.enqueue('<bash>\ncmd: ls /tmp; pwd\n</bash>', '<finish>\nmessage: done again\n</finish>');
    next = stopped();
    await dc.restartFrameRequest({ frameId: 1 });
    const restarted = await next;
    assert.equal(restarted.body.reason, 'restart');
    const state = (await dc.customRequest('tbrl/state')).body;
    assert.equal(state.live, true);
    assert.equal(state.pending, 1, 'stopped before step 1 of the fork');
    assert.notEqual(state.trajectory, first.trajectory);
    const frames = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames;
    assert.deepEqual(frames.map((f) => f.name.slice(0, 3)), ['#1 ', '#0 ']);
    assert.match(frames[1].name, /echo a > \/tmp\/a/);

    next = stopped();
    await dc.continueRequest({ threadId: 1 });
    assert.match((await next).body.description ?? '', /run ended: finished/);
    const fork = await readTrajectory(state.trajectory);
    forkRunId = fork.header.runId;
    assert.deepEqual(fork.header.forkedFrom, { runId: sourceRunId, step: 0, trajectory: first.trajectory });
    assert.deepEqual(fork.steps[0], source.steps[0]);
    const out = fork.steps[1].actions[0].observation;
    assert.match(out, /\ba\b/);
    assert.doesNotMatch(out, /\bb\b/, "the source's step 1 is undone");
    assert.match(out, /\/tmp\/w0/, 'cwd of step 0 restored');
    assert.ok((await checkpointsOf(sourceRunId)) > 0 && (await checkpointsOf(forkRunId)) > 0, 'checkpoints exist while the session lives');
  } finally {
    await dc.stop();
    await srv.close();
  }
  assert.equal(await checkpointsOf(sourceRunId!), 0, 'source checkpoints removed with the session');
  assert.equal(await checkpointsOf(forkRunId!), 0, 'fork checkpoints removed with the session');
  assert.equal((await containersOf(sourceRunId!)) + (await containersOf(forkRunId!)), 0, 'no container left');
});

async function withSession(launch: Record<string, unknown>, body: (dc: DebugClient, stopped: () => Promise<DebugProtocol.StoppedEvent>, runIds: string[]) => Promise<void>): Promise<void> {
  const dc = new DebugClient('node', 'unused', 'tbrl');
  dc.defaultTimeout = 30_000;
  await dc.start(server.port);
  const stopped = (): Promise<DebugProtocol.StoppedEvent> => dc.waitForEvent('stopped', 60_000) as Promise<DebugProtocol.StoppedEvent>;
  const runIds: string[] = [];
  try {
    await dc.initializeRequest();
    const next = stopped();
    await dc.launchRequest({ task: resolve('examples/hello-world'), runsDir, stopOnEntry: false, skipReward: true, ...launch } as DebugProtocol.LaunchRequestArguments);
    await dc.configurationDoneRequest();
    await next;
    runIds.push((await dc.customRequest('tbrl/state')).body.runId);
    await body(dc, stopped, runIds);
  } finally {
    await dc.stop();
  }
  for (const id of runIds) assert.equal((await checkpointsOf(id)) + (await containersOf(id)), 0, `nothing of ${id} is left`);
}

test('live step back and reverse continue undo the steps in the container by default (a fork, or a fresh start for step 0)', { timeout: 180_000 }, async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  srv.enqueue('<bash>\ncmd: echo a > /tmp/a\n</bash>', '<bash>\ncmd: echo b > /tmp/b\n</bash>', '<finish>\nmessage: done\n</finish>');
  try {
    // No "stepBackRestores" attribute: restoring is the default. The breakpoint holds the run before its finish turn.
    await withSession({ baseUrl: srv.baseUrl, model: 'm', breakOn: ['/<finish>/'] }, async (dc, stopped, runIds) => {
      const first = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([first.pending, first.live], [2, true], 'paused before the finish turn');

      srv.enqueue('<bash>\ncmd: ls /tmp\n</bash>', '<finish>\nmessage: done\n</finish>');
      let next = stopped();
      await dc.stepBackRequest({ threadId: 1 });
      await next;
      const state = (await dc.customRequest('tbrl/state')).body;
      assert.equal(state.pending, 1, 'paused before step 1 again, which has not run in the new container');
      assert.equal(state.live, true);
      assert.notEqual(state.trajectory, first.trajectory);
      next = stopped();
      await dc.continueRequest({ threadId: 1 });
      await next;
      const forkState = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([forkState.pending, forkState.trajectory], [2, state.trajectory], 'the fork runs step 1 and stops before its finish turn');
      const fork = await readTrajectory(state.trajectory);
      runIds.push(fork.header.runId);
      assert.equal(fork.header.forkedFrom?.step, 0);
      const out = fork.steps[1].actions[0].observation;
      assert.match(out, /\ba\b/);
      assert.doesNotMatch(out, /\bb\b/);

      // Reverse continue with no breakpoint hit behind goes back to step 0: the task starts again in a fresh container.
      srv.enqueue('<bash>\ncmd: ls /tmp\n</bash>', '<finish>\nmessage: done\n</finish>');
      next = stopped();
      await dc.send('reverseContinue', { threadId: 1 });
      await next;
      const again = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([again.pending, again.steps, again.live], [0, 0, true], 'paused before step 0 of a new run');
      assert.notEqual(again.trajectory, state.trajectory);
      next = stopped();
      await dc.continueRequest({ threadId: 1 });
      await next;
      next = stopped();
      await dc.continueRequest({ threadId: 1 });
      assert.match((await next).body.description ?? '', /run ended: finished/);
      const fresh = await readTrajectory(again.trajectory);
      runIds.push(fresh.header.runId);
      assert.equal(fresh.header.forkedFrom, undefined, 'step 0 has no checkpoint before it: a fresh start, not a fork');
      assert.doesNotMatch(fresh.steps[0].actions[0].observation, /\ba\b|\bb\b/, 'neither step of the earlier runs is in the new container');

      // The run has ended: its session is a replay of it now, and stepping back only looks.
      next = stopped();
      await dc.stepBackRequest({ threadId: 1 });
      await next;
      const ended = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([ended.current, ended.live, ended.trajectory], [0, false, again.trajectory]);
    });
  } finally {
    await srv.close();
  }
});

test('with "stepBackRestores": false, live step back and reverse continue only move through the recorded steps', { timeout: 120_000 }, async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  srv.enqueue('<bash>\ncmd: echo a > /tmp/a\n</bash>', '<bash>\ncmd: echo b > /tmp/b\n</bash>', '<finish>\nmessage: done\n</finish>');
  try {
    await withSession({ baseUrl: srv.baseUrl, model: 'm', breakOn: ['/<finish>/'], stepBackRestores: false }, async (dc, stopped) => {
      const first = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([first.pending, first.live], [2, true]);
      let next = stopped();
      await dc.stepBackRequest({ threadId: 1 });
      await next;
      let state = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([state.current, state.pending, state.live, state.trajectory], [1, 2, true, first.trajectory], 'shows step 1; the same run still waits before step 2');
      next = stopped();
      await dc.send('reverseContinue', { threadId: 1 });
      assert.equal((await next).body.reason, 'entry');
      state = (await dc.customRequest('tbrl/state')).body;
      assert.deepEqual([state.current, state.pending, state.trajectory], [0, 2, first.trajectory]);
    });
  } finally {
    await srv.close();
  }
});
