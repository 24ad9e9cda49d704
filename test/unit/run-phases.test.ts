/**
 * The run pipeline's phases against a fake of our own sandbox interface: each phase on its own
 * (what it adds to the run context, what it says in progress events, when it does nothing), the
 * orchestrator's order and failure handling, and runTask end to end with the result as a value.
 * The same phases against real Docker: test/integration/run.test.ts and the other runTask tests.
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { TbrlError } from '../../src/core/errors';
import { prepare } from '../../src/core/run/phases/prepare';
import { sandboxPhase } from '../../src/core/run/phases/sandbox';
import { agentPhase } from '../../src/core/run/phases/agent';
import { scorePhase } from '../../src/core/run/phases/score';
import { creditPhase } from '../../src/core/run/phases/credit';
import { snapshotPhase } from '../../src/core/run/phases/snapshot';
import { finalize, footerOf } from '../../src/core/run/phases/finalize';
import { PIPELINE, runPhases, runTask, type RunContext, type RunProgress, type RunTaskOptions } from '../../src/core/run/run-task';
import { shapeReward, type RewardHook } from '../../src/core/reward/hooks';
import type { Checkpoint, ExecResult, ImageRef, Sandbox, SandboxProvider, SandboxSpec } from '../../src/core/sandbox/types';
import type { OriginalSource } from '../../src/core/attribution/originals';
import type { RewardRecord } from '../../src/core/trajectory/schema';
import { readTrajectory } from '../../src/core/trajectory/reader';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-run-phases-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const outDir = (): string => join(scratch, `run-${dirs++}`);

/** A sandbox of our own interface that records what the run asked of it; commands print their text. */
class FakeSandbox implements Sandbox {
  readonly info = { containerId: 'fake-container', image: 'fake/image:1', tracing: { available: false, reason: 'fake' } };
  readonly commands: string[] = [];
  closed = 0;
  originalsAsked: Array<{ image: ImageRef; runId: string }> = [];
  originalsClosed = 0;
  constructor(private readonly onExec?: (command: string) => Partial<ExecResult> | undefined) {}
  async exec(command: string): Promise<ExecResult> {
    this.commands.push(command);
    return { exitCode: 0, output: `ran: ${command}\n`, droppedBytes: 0, timedOut: false, durationMs: 1, ...this.onExec?.(command) };
  }
  async execArgv(argv: string[]): Promise<ExecResult> {
    return this.exec(argv.join(' '));
  }
  async readFile(): Promise<Buffer> {
    throw new Error('no such file');
  }
  async writeFile(): Promise<void> {}
  async putArchive(): Promise<void> {}
  async getArchive(): Promise<Readable> {
    return Readable.from([]);
  }
  async checkpoint(step: number): Promise<Checkpoint> {
    return { imageId: `img-${step}`, runId: 'r', step, createdAt: new Date().toISOString(), cwd: '/app', env: {} };
  }
  async close(): Promise<void> {
    this.closed++;
  }
  async originalImage(): Promise<ImageRef> {
    return { name: this.info.image, id: 'sha256:fake' };
  }
  originals(image: ImageRef, runId: string): OriginalSource {
    this.originalsAsked.push({ image, runId });
    return { read: async () => ({ kind: 'unknown', why: 'fake' }), close: async () => void this.originalsClosed++ };
  }
}

class FakeProvider implements SandboxProvider {
  readonly specs: SandboxSpec[] = [];
  readonly sandboxes: FakeSandbox[] = [];
  constructor(private readonly make: () => FakeSandbox = () => new FakeSandbox()) {}
  async create(spec: SandboxSpec): Promise<Sandbox> {
    this.specs.push(spec);
    const sb = this.make();
    this.sandboxes.push(sb);
    return sb;
  }
  async fork(): Promise<Sandbox> {
    throw new Error('not in these tests');
  }
  async gc(): Promise<{ containers: number; images: number }> {
    return { containers: 0, images: 0 };
  }
  async removeCheckpoint(): Promise<void> {}
}

const bash = (cmd: string): string => `<bash>\ncmd: ${cmd}\n</bash>`;
const FINISH = '<finish>\nmessage: done\n</finish>';

function options(extra: Partial<RunTaskOptions> = {}): RunTaskOptions & { events: RunProgress[]; provider: FakeProvider } {
  const events: RunProgress[] = [];
  const provider = (extra.sandboxProvider as FakeProvider | undefined) ?? new FakeProvider();
  return { taskDir: EXAMPLE, outDir: outDir(), env: {}, cwd: scratch, trace: false, policyOverride: new ScriptedPolicy([bash('echo hi'), FINISH]), sandboxProvider: provider, onProgress: (e) => events.push(e), ...extra, events, provider };
}

/** A context through the given phases, as the orchestrator would run them. */
async function through(o: RunTaskOptions, phases = PIPELINE): Promise<RunContext> {
  const ctx = await prepare(o);
  await runPhases(ctx, phases);
  if (ctx.failure) throw ctx.failure;
  return ctx;
}

describe('prepare', () => {
  test('makes the context: task, policy, run id and directory, header; its events are stamped prepare', async () => {
    const o = options({ maxSteps: 7 });
    const ctx = await prepare(o);
    assert.equal(ctx.phase, 'prepare');
    assert.equal(ctx.task.id, 'hello-world');
    assert.match(ctx.runId, /^hello-world-\d{8}-\d{6}-[0-9a-f]{4}$/);
    assert.equal(ctx.trajectoryPath, join(o.outDir!, 'trajectory.jsonl'));
    assert.equal(ctx.header.policy.kind, 'scripted');
    assert.equal(ctx.header.limits?.maxSteps, 7);
    assert.deepEqual(ctx.steps, []);
    assert.deepEqual(o.events, [{ type: 'phase', phase: 'prepare', message: `Loading task ${EXAMPLE}` }]);
    assert.equal(existsSync(o.outDir!), false, 'nothing on disk before the sandbox phase');
  });

  test('a task that does not load rejects: there is no run to return', async () => {
    await assert.rejects(prepare(options({ taskDir: join(scratch, 'no-such-task') })));
  });
});

describe('sandbox phase', () => {
  test('starts the sandbox through the interface, fills header.sandbox from it, creates the trajectory', async () => {
    const o = options();
    const ctx = await through(o, [sandboxPhase]);
    const sb = o.provider.sandboxes[0];
    assert.equal(ctx.inner, sb);
    assert.equal(o.provider.specs[0].runId, ctx.runId);
    assert.deepEqual(ctx.header.sandbox?.originalImage, { name: 'fake/image:1', id: 'sha256:fake' });
    assert.equal(ctx.header.sandbox?.tracing.available, false);
    assert.deepEqual(ctx.rewardHooks.map((h) => h.name), ['pprs']);
    const onDisk = await readTrajectory(ctx.trajectoryPath);
    assert.equal(onDisk.header.runId, ctx.runId);
    assert.ok(ctx.warnings.some((w) => /^Tracing is off \(tracing disabled by configuration\)/.test(w)), ctx.warnings.join('\n'));
    const mine = o.events.filter((e) => e.phase === 'sandbox').map((e) => e.type);
    assert.deepEqual(mine, ['phase', 'warning']);
  });
});

describe('agent phase', () => {
  test('runs the loop; each step goes through the reward hooks before it is written', async () => {
    const o = options();
    const ctx = await through(o, [sandboxPhase]);
    const seen: number[] = [];
    ctx.rewardHooks = [{ name: 'probe', onStep: async (s) => void seen.push(s.index), shape: async (r) => r }];
    ctx.phase = 'agent';
    await agentPhase.run(ctx);
    assert.equal(ctx.loop?.endReason, 'finished');
    assert.deepEqual(seen, [0, 1]);
    assert.deepEqual(ctx.steps.map((s) => s.index), [0, 1]);
    assert.ok(o.provider.sandboxes[0].commands.some((c) => c.includes('echo hi')));
    const steps = o.events.filter((e) => e.type === 'step');
    assert.equal(steps.length, 2);
    assert.ok(steps.every((e) => e.phase === 'agent'));
  });
});

describe('score phase', () => {
  const reward: RewardRecord = { tests: 1, weights: { tests: 1, judge: 0 }, total: 1 };

  test('scoreRun scores the run when the caller gives one; no credit follows', async () => {
    const o = options({ scoreRun: async () => reward });
    const ctx = await through(o, [sandboxPhase, agentPhase, scorePhase, creditPhase]);
    assert.deepEqual(ctx.reward, reward);
    assert.equal(ctx.scoredByTests, undefined);
    assert.equal(ctx.depgpo, undefined);
    assert.deepEqual(o.events.filter((e) => e.type === 'phase').map((e) => e.phase), ['prepare', 'sandbox', 'agent', 'score']);
  });

  test('skipReward and an interrupted loop leave the run unscored', async () => {
    const skipped = await through(options({ skipReward: true, scoreRun: async () => reward }), [sandboxPhase, agentPhase, scorePhase]);
    assert.equal(skipped.reward, undefined);
    const ctx = await through(options({ scoreRun: async () => reward }), [sandboxPhase, agentPhase]);
    ctx.loop = { ...ctx.loop!, endReason: 'interrupted' };
    await scorePhase.run(ctx);
    assert.equal(ctx.reward, undefined);
  });

  test("the task's tests score the run, the reward hooks shape it, and credit runs on their trace", async () => {
    // The fake's test run prints a pytest summary in which every test of the example task passed.
    const summary = '=========================== short test summary info ============================\nPASSED tests/test_outputs.py::test_script_exists\nPASSED tests/test_outputs.py::test_counts_correct\nPASSED tests/test_outputs.py::test_counts_sorted\nPASSED tests/test_outputs.py::test_summary_line\n============================== 4 passed in 0.01s ===============================\n';
    const provider = new FakeProvider(() => new FakeSandbox((c) => (c.includes('run-tests.sh') ? { output: summary } : undefined)));
    const o = options({ sandboxProvider: provider });
    const ctx = await through(o, [sandboxPhase, agentPhase]);
    const shaped: RewardHook = { name: 'halve', shape: async (r) => ({ ...r, total: r.total / 2 }) };
    ctx.rewardHooks = [...ctx.rewardHooks, shaped];
    ctx.phase = 'score';
    await scorePhase.run(ctx);
    assert.equal(ctx.scoredByTests, true);
    assert.equal(ctx.reward?.tests, 1, JSON.stringify(ctx.reward));
    assert.equal(ctx.reward?.total, 0.5, 'the hooks shaped the test reward');
    ctx.phase = 'credit';
    await creditPhase.run(ctx);
    assert.ok(ctx.depgpo || ctx.warnings.some((w) => /DepGPO/.test(w)), 'credit either computed or said why not');
    assert.deepEqual(o.events.filter((e) => e.type === 'phase').map((e) => e.phase), ['prepare', 'sandbox', 'agent', 'score', 'credit']);
  });
});

describe('reward hooks', () => {
  test('shapeReward applies every hook in order', async () => {
    const add = (n: number): RewardHook => ({ name: `+${n}`, shape: async (r) => ({ ...r, total: r.total * 10 + n }) });
    const r = await shapeReward([add(1), add(2)], { weights: { tests: 1, judge: 0 }, total: 0 });
    assert.equal(r.total, 12);
  });
});

describe('snapshot phase', () => {
  test("reads originals through the sandbox from the header's original image, closes them, then beforeClose", async () => {
    const looked: string[] = [];
    const o = options({ beforeClose: async (_sb, dir) => void looked.push(dir) });
    const ctx = await through(o, [sandboxPhase, agentPhase, snapshotPhase]);
    const sb = o.provider.sandboxes[0];
    assert.deepEqual(sb.originalsAsked, [{ image: { name: 'fake/image:1', id: 'sha256:fake' }, runId: ctx.runId }]);
    assert.equal(sb.originalsClosed, 1);
    assert.deepEqual(looked, [ctx.outDir]);
  });

  test('an aborted run takes no snapshot and no last look', async () => {
    const abort = new AbortController();
    const looked: string[] = [];
    const o = options({ signal: abort.signal, beforeClose: async () => void looked.push('x') });
    const ctx = await through(o, [sandboxPhase, agentPhase]);
    abort.abort('cancelled');
    await snapshotPhase.run(ctx);
    assert.deepEqual(o.provider.sandboxes[0].originalsAsked, []);
    assert.deepEqual(looked, []);
  });
});

describe('finalize', () => {
  test('a failure in a phase stops the later ones; finalize closes the sandbox and returns the result with the error', async () => {
    const o = options();
    const ctx = await prepare(o);
    const ran: string[] = [];
    await runPhases(ctx, [sandboxPhase, { name: 'agent', run: async () => { throw new Error('boom'); } }, { name: 'score', run: async () => void ran.push('score') }]);
    assert.deepEqual(ran, []);
    const { result, error } = await finalize(ctx);
    assert.ok(error instanceof TbrlError);
    assert.equal(error.code, 'run-failed');
    assert.match(error.message, /boom/);
    assert.equal(result.footer.endReason, 'error');
    assert.equal(o.provider.sandboxes[0].closed, 1);
    assert.equal((await readTrajectory(result.trajectoryPath)).footer?.endReason, 'error');
    assert.ok(existsSync(result.reportPath));
    assert.equal(o.events.at(-1)?.phase, 'finalize');
  });

  test('a failure before the sandbox existed still leaves a trajectory that says so', async () => {
    const o = options({ sandboxProvider: Object.assign(new FakeProvider(), { create: async () => { throw new TbrlError('IMAGE_BUILD_FAILED', 'no image', 'fix it'); } }) });
    const ctx = await prepare(o);
    await runPhases(ctx);
    const { result, error } = await finalize(ctx);
    assert.equal(error?.code, 'IMAGE_BUILD_FAILED');
    const t = await readTrajectory(result.trajectoryPath);
    assert.equal(t.footer?.endReason, 'error');
    assert.equal(t.steps.length, 0);
  });

  test('a lost container ends the run interrupted, not error', async () => {
    const ctx = await prepare(options());
    ctx.failure = new TbrlError('CONTAINER_GONE', 'gone', '');
    assert.equal(footerOf(ctx).endReason, 'interrupted');
  });
});

describe('runTask', () => {
  test('phase events come in pipeline order and every event names its phase; the result is a value', async () => {
    const o = options({ scoreRun: async () => ({ tests: 1, weights: { tests: 1, judge: 0 }, total: 1 }) });
    const { result, error } = await runTask(o);
    assert.equal(error, undefined);
    assert.equal(result.footer.reward?.total, 1);
    assert.equal(result.footer.endReason, 'finished');
    assert.deepEqual(o.events.filter((e) => e.type === 'phase').map((e) => e.phase), ['prepare', 'sandbox', 'agent', 'score', 'finalize']);
    const order = ['prepare', 'sandbox', 'agent', 'score', 'credit', 'snapshot', 'finalize'];
    const seen = o.events.map((e) => order.indexOf(e.phase));
    assert.ok(seen.every((k, i) => k >= 0 && (i === 0 || k >= seen[i - 1])), o.events.map((e) => e.phase).join(' '));
    assert.match(readFileSync(result.reportPath, 'utf8'), /hello-world/);
    assert.equal(o.provider.sandboxes[0].closed, 1);
  });
});
