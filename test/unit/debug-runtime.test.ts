import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { TrajectoryRuntime, type LiveHooks, type LiveRun, type RuntimeEvent, type RuntimeLaunchArgs } from '../../src/core/debug/runtime';
import type { BeforeExecuteDecision, PendingTurn } from '../../src/core/agent/loop';
import type { ForkSource } from '../../src/core/run/fork';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';
import type { HumanDecision } from '../../src/core/debug/turn';
import { parseTurn } from '../../src/core/actions/parser';
import { syntheticSteps, syntheticTrajectory } from '../helpers/trajectory-fixture';

// The stepping state of the debugger without the Debug Adapter Protocol: replays read a synthetic
// trajectory (see trajectory-fixture.ts for its shape); live runs are a scripted stand-in for
// startLiveRun, so live stepping, decisions, step back and fork run without Docker.
let dir: string;
let trajectory: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'tbrl-runtime-'));
  trajectory = join(dir, 'trajectory.jsonl');
  writeFileSync(trajectory, syntheticTrajectory(10));
});
after(() => rmSync(dir, { recursive: true, force: true }));

type Stop = Extract<RuntimeEvent, { type: 'stopped' }>;

/** A live run the test drives: turns wait on the runtime's decision, steps and the end are pushed by hand. */
class ScriptedLive implements LiveRun {
  readonly outDir: string;
  readonly trajectoryPath: string;
  readonly labelsPath: string;
  cancelled = false;
  readonly decisions: HumanDecision[] = [];
  private settle!: () => void;
  readonly done = new Promise<void>((r) => (this.settle = r));

  constructor(readonly args: RuntimeLaunchArgs, readonly hooks: LiveHooks, readonly forkFrom: ForkSource | undefined, n: number) {
    this.outDir = join(dir, `live-${n}`);
    this.trajectoryPath = join(this.outDir, 'trajectory.jsonl');
    this.labelsPath = join(this.outDir, 'labels.jsonl');
  }

  cancel(): void {
    this.cancelled = true;
    this.settle();
  }

  async recordDecision(_step: number, _turn: PendingTurn, d: HumanDecision): Promise<number> {
    this.decisions.push(d);
    return d.action === 'pick' ? 1 : 0;
  }

  /** The agent proposes `text` before step `step`; resolves with what the debugger decided. */
  turn(step: number, text: string, candidates: string[] = [text]): Promise<BeforeExecuteDecision> {
    const parsed = parseTurn(text);
    return this.hooks.beforeExecute(step, { step, text, parsed, policyTurn: { candidates: candidates.map((c) => ({ text: c, parses: true })), chosen: 0, usage: { promptTokens: 1, completionTokens: 1 } } });
  }

  header(runId: string): void {
    this.hooks.onHeader({ runId, task: { id: 't', dir: '/task' } } as unknown as TrajectoryHeader);
  }

  end(footer: Partial<TrajectoryFooter> = { endReason: 'finished' }): void {
    this.hooks.onEnd(footer as TrajectoryFooter, this.trajectoryPath);
    this.settle();
  }
}

function harness(args: RuntimeLaunchArgs = {}) {
  const events: RuntimeEvent[] = [];
  const lives: ScriptedLive[] = [];
  const removed: string[][] = [];
  const rt = new TrajectoryRuntime((e) => events.push(e), {
    startLive: (a, hooks, forkFrom) => {
      const live = new ScriptedLive(a, hooks, forkFrom, lives.length);
      lives.push(live);
      return live;
    },
    removeCheckpoints: async (runIds) => {
      removed.push(runIds);
      return runIds.length;
    },
  });
  const stops = (): Stop[] => events.filter((e): e is Stop => e.type === 'stopped');
  const lastStop = (): Stop => stops()[stops().length - 1];
  const count = (type: RuntimeEvent['type']): number => events.filter((e) => e.type === type).length;
  const launch = async (extra: RuntimeLaunchArgs = {}): Promise<void> => {
    assert.equal(await rt.load({ ...args, ...extra }), undefined);
    rt.start();
  };
  return { rt, events, lives, removed, stops, lastStop, count, launch };
}

/** Lets the runtime's awaited work (a cancelled run's `done`) settle. */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

test('replay: entry at step 0, step forward, step back, reverse continue back to the start', async () => {
  const h = harness({ trajectory });
  await h.launch();
  assert.deepEqual(h.events.find((e) => e.type === 'loaded'), { type: 'loaded', trajectory, runId: 'synthetic-10', steps: 10 });
  assert.deepEqual(h.lastStop(), { type: 'stopped', step: 0, reason: 'entry', description: 'step 0', text: undefined, pending: false, trajectory });
  h.rt.step();
  h.rt.step();
  assert.equal(h.rt.currentStep, 2);
  assert.equal(h.lastStop().reason, 'step');
  await h.rt.stepBack();
  assert.equal(h.rt.currentStep, 1);
  h.rt.step();
  h.rt.step();
  await h.rt.reverseContinue();
  assert.deepEqual([h.rt.currentStep, h.lastStop().reason, h.lastStop().description], [0, 'entry', 'start of run']);
  await h.rt.stepBack();
  assert.deepEqual([h.rt.currentStep, h.lastStop().reason], [0, 'entry'], 'step back at step 0 stays there');
  assert.equal(h.rt.frame(3)?.kind, 'step');
  assert.equal(h.rt.frame(10), undefined);
});

test('replay: continue without breakpoints ends at the last step with the reward; past the end, continue and step terminate', async () => {
  const h = harness({ trajectory });
  await h.launch();
  h.rt.continue();
  assert.deepEqual([h.rt.currentStep, h.lastStop().description], [9, 'end of run: reward 0.750']);
  h.rt.continue();
  assert.equal(h.count('terminated'), 1);
  h.rt.step();
  assert.equal(h.count('terminated'), 2, 'stepping past the last step ends the session too');
});

test('breakpoints: ids follow the list, a refused one keeps its slot; continue and reverse continue stop at hits', async () => {
  const h = harness({ trajectory });
  await h.launch();
  const set = h.rt.setBreakpoints(['bogus breakpoint!', 'file.edit']);
  assert.equal(set[0].verified, false);
  assert.match((set[0] as { message: string }).message, /Unrecognised breakpoint/);
  assert.deepEqual(set[1], { verified: true, id: 2 });
  h.rt.continue();
  assert.deepEqual([h.rt.currentStep, h.lastStop().reason, h.lastStop().hitBreakpointIds], [1, 'function breakpoint', [2]]);
  h.rt.continue();
  assert.equal(h.rt.currentStep, 4, 'file.edit steps are 1, 4, 7');
  h.rt.setBreakpoints(['error']);
  h.rt.continue();
  h.rt.continue();
  assert.equal(h.rt.currentStep, 9, 'no error after step 3: to the end');
  await h.rt.reverseContinue();
  assert.deepEqual([h.rt.currentStep, h.lastStop().description], [3, 'breakpoint error at step 3']);
});

test('launch: breakOn with stopOnEntry false runs to the first hit (no breakpoint id: not in the client\'s list)', async () => {
  const h = harness({ trajectory, stopOnEntry: false, breakOn: ['phi-drop'] });
  await h.launch();
  assert.deepEqual([h.rt.currentStep, h.lastStop().reason, h.lastStop().hitBreakpointIds], [6, 'function breakpoint', []]);
});

test('launch errors: a bad breakOn, neither trajectory nor task, a missing file, a trajectory without steps', async () => {
  assert.deepEqual((await harness().rt.load({ trajectory, breakOn: ['margin<'] }))?.code, 1001);
  assert.match((await harness().rt.load({}))?.message ?? '', /names neither a trajectory nor a task/);
  assert.equal((await harness().rt.load({ trajectory: join(dir, 'nope.jsonl') }))?.code, 1003);
  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, syntheticTrajectory(10).split('\n')[0] + '\n');
  assert.deepEqual(await harness().rt.load({ trajectory: empty }), { code: 1004, message: `${empty} has no steps to replay (the run ended before its first step). Run the task again: tbrl run <task>.` });
});

test('select: any frame of the run, refused outside it', async () => {
  const h = harness({ trajectory });
  await h.launch();
  assert.equal(h.rt.selectError(7), undefined);
  h.rt.select(7);
  assert.deepEqual([h.rt.currentStep, h.lastStop().reason, h.lastStop().description], [7, 'goto', 'selected step 7']);
  assert.deepEqual(h.rt.selectError(99), { code: 1010, message: 'Step 99 is outside this run (0..9).' });
  assert.equal(h.rt.selectError('x')?.code, 1010);
  assert.deepEqual(h.rt.state(), { current: 7, steps: 10, pending: null, runId: 'synthetic-10', live: false, trajectory });
});

test('live: stops before the first turn, step runs it and stops before the next, continue runs to the end', async () => {
  const h = harness({ task: '/task' });
  await h.launch();
  const live = h.lives[0];
  assert.equal(live.args.task, '/task');
  const first = live.turn(0, '<bash>\ncmd: ls\n</bash>');
  assert.deepEqual(h.lastStop(), { type: 'stopped', step: 0, reason: 'entry', description: 'before step 0', text: 'before step 0', pending: true, trajectory: live.trajectoryPath });
  assert.equal(h.rt.frame(0)?.kind, 'pending');
  assert.deepEqual(h.rt.pendingTurn(), { step: 0, text: '<bash>\ncmd: ls\n</bash>', candidates: [{ text: '<bash>\ncmd: ls\n</bash>', parses: true }], chosen: 0, decision: undefined });
  h.rt.step();
  assert.deepEqual(await first, { action: 'continue' });
  const [s0, s1] = syntheticSteps(2);
  live.hooks.onStep(s0);
  assert.deepEqual(h.events[h.events.length - 1], { type: 'step', step: 0 });
  const second = live.turn(1, '<bash>\ncmd: pwd\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason, h.lastStop().pending], [1, 'step', true]);
  h.rt.continue();
  assert.deepEqual(await second, { action: 'continue' });
  live.hooks.onStep(s1);
  assert.deepEqual(await live.turn(2, '<finish>\nmessage: done\n</finish>'), { action: 'continue' }, 'continue: no stop before the next turn');
  live.end({ endReason: 'finished', reward: { total: 1 } as TrajectoryFooter['reward'] });
  assert.deepEqual(h.events.find((e) => e.type === 'loaded'), { type: 'loaded', trajectory: live.trajectoryPath, runId: undefined, steps: 2 });
  assert.deepEqual([h.lastStop().step, h.lastStop().description, h.lastStop().pending], [1, 'run ended: finished, reward 1.000', false]);
  assert.equal(h.rt.state().live, false, 'the finished run stays open as a replay');
  h.rt.continue();
  assert.equal(h.count('terminated'), 1);
});

test('live: a breakpoint stops a running turn; pause stops before the next one; a run that ends without steps terminates', async () => {
  const h = harness({ task: '/task', stopOnEntry: false });
  await h.launch();
  h.rt.setBreakpoints(['/rm -rf/']);
  const live = h.lives[0];
  assert.deepEqual(await live.turn(0, '<bash>\ncmd: ls\n</bash>'), { action: 'continue' });
  const risky = live.turn(0, '<bash>\ncmd: rm -rf /app\n</bash>');
  assert.deepEqual([h.lastStop().reason, h.lastStop().description, h.lastStop().hitBreakpointIds], ['function breakpoint', 'breakpoint /rm -rf/', [1]]);
  h.rt.continue();
  assert.deepEqual(await risky, { action: 'continue' });
  live.hooks.onStep(syntheticSteps(1)[0]);
  h.rt.pause();
  void live.turn(1, '<bash>\ncmd: ls\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason], [1, 'step'], 'paused while running: stops before the next turn');

  const empty = harness({ task: '/task', stopOnEntry: false });
  await empty.launch();
  empty.lives[0].end();
  assert.equal(empty.count('terminated'), 1);
});

test('live decisions: a pick replaces the turn and replies its labels before it runs; refusals change nothing', async () => {
  const h = harness({ task: '/task' });
  await h.launch();
  const live = h.lives[0];
  const decided = live.turn(0, '<bash>\ncmd: a\n</bash>', ['<bash>\ncmd: a\n</bash>', '<bash>\ncmd: b\n</bash>']);
  assert.equal((await h.rt.decide({ action: 'pick', candidate: 5 }, () => assert.fail('no reply on refusal')))?.code, 1021);
  assert.equal((await h.rt.decide({ action: 'edit', text: ' ' }, () => assert.fail('no reply on refusal')))?.code, 1022);
  assert.equal((await h.rt.decide({ action: 'jump' } as unknown as HumanDecision, () => assert.fail('no reply on refusal')))?.code, 1023);
  const order: string[] = [];
  const replied: Array<number | undefined> = [];
  void decided.then(() => order.push('resolved'));
  assert.equal(await h.rt.decide({ action: 'pick', candidate: 1, stopAfter: true }, (labels) => {
    replied.push(labels);
    order.push('reply');
  }), undefined);
  assert.deepEqual(replied, [1]);
  assert.deepEqual(await decided, { action: 'replace', text: '<bash>\ncmd: b\n</bash>' });
  assert.deepEqual(order, ['reply', 'resolved']);
  assert.equal(h.events[h.events.length - 1].type, 'continued');
  assert.deepEqual(live.decisions, [{ action: 'pick', candidate: 1, stopAfter: true }]);
  live.hooks.onStep(syntheticSteps(1)[0]);
  void live.turn(1, '<bash>\ncmd: c\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason, h.lastStop().pending], [1, 'step', true], 'stopAfter: waiting before the next turn');
  assert.equal((await harness({ trajectory }).rt.decide({ action: 'accept' }, () => undefined))?.code, 1020);
});

/** A live run stopped before step 2, steps 0 and 1 recorded (checkpointed unless told). */
async function liveAtStep2(h: ReturnType<typeof harness>, checkpoint = true): Promise<ScriptedLive> {
  await h.launch();
  const live = h.lives[0];
  live.header('run-a');
  const steps = syntheticSteps(2).map((s): StepRecord => (checkpoint ? { ...s, checkpoint: `ckpt-${s.index}`, checkpointState: { cwd: '/app', env: {} } as unknown as StepRecord['checkpointState'] } : s));
  h.rt.continue();
  void live.turn(0, '<bash>\ncmd: a\n</bash>');
  h.rt.continue();
  live.hooks.onStep(steps[0]);
  live.hooks.onStep(steps[1]);
  h.rt.pause();
  void live.turn(2, '<bash>\ncmd: c\n</bash>');
  assert.deepEqual([h.rt.currentStep, h.lastStop().pending], [2, true]);
  return live;
}

test('live step back restores: the run is replaced by a fork from the checkpoint before the target, stopped before it', async () => {
  const h = harness({ task: '/task' });
  const live = await liveAtStep2(h);
  await h.rt.stepBack();
  assert.equal(live.cancelled, true, 'the old run is stopped');
  assert.equal(h.lives.length, 2);
  assert.deepEqual(h.lives[1].forkFrom, { trajectoryPath: live.trajectoryPath, step: 0 });
  assert.equal(h.lives[1].args.trajectory, undefined);
  assert.deepEqual(h.events.find((e) => e.type === 'forked'), { type: 'forked', from: live.trajectoryPath, step: 0, trajectory: h.lives[1].trajectoryPath });
  assert.equal(h.rt.recordedSteps.length, 1, 'steps from the target on are gone');
  assert.equal(h.rt.state().trajectory, h.lives[1].trajectoryPath);
  const old = live.turn(5, '<bash>\ncmd: late\n</bash>');
  assert.deepEqual(await old, { action: 'stop' }, 'a late turn of the replaced run is stopped, never run');
  void h.lives[1].turn(1, '<bash>\ncmd: b\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason, h.lastStop().pending], [1, 'step', true]);
});

test('live step back without a checkpoint only shows the recorded step and says why; stepBackRestores false never restores', async () => {
  const h = harness({ task: '/task' });
  await liveAtStep2(h, false);
  await h.rt.stepBack();
  assert.equal(h.lives.length, 1);
  assert.equal(h.rt.currentStep, 1);
  assert.match((h.events.find((e) => e.type === 'output') as { text: string }).text, /^Step 0 has no checkpoint, so going back only shows step 1/);

  const viewOnly = harness({ task: '/task', stepBackRestores: false });
  await liveAtStep2(viewOnly);
  await viewOnly.rt.reverseContinue();
  assert.deepEqual([viewOnly.lives.length, viewOnly.rt.currentStep, viewOnly.lastStop().reason], [1, 0, 'entry']);
});

test('fork (restart frame): refused without a step or checkpoint; from step 0 a new run keeps step 0 and stops before step 1', async () => {
  const h = harness({ task: '/task' });
  const live = await liveAtStep2(h);
  assert.equal(h.rt.forkError(2)?.code, 1030, 'the waiting turn has not run');
  assert.match(h.rt.forkError(7)?.message ?? '', /There is no step 7/);
  assert.equal(h.rt.forkError(0), undefined);
  await h.rt.fork(0);
  assert.deepEqual(h.lives[1].forkFrom, { trajectoryPath: live.trajectoryPath, step: 0 });
  h.lives[1].header('run-b');
  void h.lives[1].turn(1, '<bash>\ncmd: b2\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason], [1, 'restart']);

  const bare = harness({ task: '/task' });
  await liveAtStep2(bare, false);
  assert.equal(bare.rt.forkError(0)?.code, 1031);

  // The session's end removes the checkpoints of both runs it started; keepCheckpoints keeps them.
  await h.rt.shutdown();
  assert.deepEqual(h.removed, [['run-a', 'run-b']]);
  assert.equal(h.lives[1].cancelled, true);
  const keep = harness({ task: '/task', keepCheckpoints: true });
  await liveAtStep2(keep);
  await keep.rt.shutdown();
  assert.deepEqual(keep.removed, []);
  await settle();
});

test('live step back to step 0 starts the task again from scratch', async () => {
  const h = harness({ task: '/task' });
  await liveAtStep2(h);
  h.rt.select(1);
  await h.rt.stepBack();
  assert.equal(h.lives.length, 2);
  assert.equal(h.lives[1].forkFrom, undefined);
  assert.equal(h.rt.recordedSteps.length, 0);
  assert.ok(h.events.some((e) => e.type === 'output' && e.text === 'Starting the task again from its first step\n'));
  void h.lives[1].turn(0, '<bash>\ncmd: a\n</bash>');
  assert.deepEqual([h.lastStop().step, h.lastStop().reason], [0, 'step']);
});
