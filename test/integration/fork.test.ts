/**
 * Forking a run from a step's checkpoint on real Docker: the container comes back as it was after
 * that step (files, cwd, exported env), the conversation and agent state are rebuilt, steps 0..k
 * are copied, and nothing (containers, checkpoint images) is left behind.
 */
import { forkRunOk, runTaskOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import Docker from 'dockerode';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import type { Policy, PolicyContext, PolicyTurn } from '../../src/core/agent/policy';
import type { ChatMessage } from '../../src/core/model/types';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { TbrlError } from '../../src/core/errors';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-fork-it-'));
const docker = new Docker();
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST } as NodeJS.ProcessEnv;
const runIds: string[] = [];

after(async () => {
  // Newest run first: a fork's checkpoints are children of its source's images.
  for (const runId of runIds.reverse()) {
    const imgs = await docker.listImages({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, 'dev.tbrl.kind=checkpoint'] } });
    for (const img of imgs) await docker.getImage(img.Id).remove({ force: true }).catch(() => undefined);
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** Plays fixed turns by step number and keeps the messages it was shown at each step. */
class RecordingPolicy implements Policy {
  readonly kind = 'scripted' as const;
  readonly description = 'recording scripted policy';
  readonly seen = new Map<number, ChatMessage[]>();
  constructor(private readonly turns: Record<number, string>) {}
  async next(c: PolicyContext): Promise<PolicyTurn> {
    this.seen.set(c.step, structuredClone(c.messages));
    const text = this.turns[c.step] ?? '';
    return { candidates: [{ text, parses: text !== '' }], chosen: 0, usage: { promptTokens: 0, completionTokens: 0 } };
  }
}

const SECRET = 'sk-forktestsecretvalue0123456789';
const STEP0 = `<bash>\ncmd: echo a > /tmp/a && mkdir -p /tmp/w0 && cd /tmp/w0 && export FORKVAR=zero MY_API_KEY=${SECRET}\n</bash>\n<todo>\noperations:\n  - action: add\n    content: plan item\n</todo>\n<scratchpad>\naction: add_note\ncontent: note from step 0\n</scratchpad>`;
const STEP1 = '<bash>\ncmd: echo b > /tmp/b && mkdir -p /tmp/w1 && cd /tmp/w1 && export FORKVAR=one\n</bash>';
const PROBE = '<bash>\ncmd: ls /tmp; pwd; echo "var=$FORKVAR key=${MY_API_KEY:-unset}"\n</bash>';
const FINISH = '<finish>\nmessage: done\n</finish>';

test('fork from step 0 restores files, cwd, env and state, copies step 0 and computes a reward', async () => {
  const sourcePolicy = new RecordingPolicy({ 0: STEP0, 1: STEP1, 2: FINISH });
  const src = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'src'), env, cwd: scratch, policyOverride: sourcePolicy, checkpoint: true, skipReward: true });
  runIds.push(src.runId);
  assert.equal(src.footer.endReason, 'finished');
  assert.ok(src.steps[0].checkpoint && src.steps[0].checkpointState, 'step 0 has a checkpoint and its shell state');
  assert.equal(src.steps[0].checkpointState!.cwd, '/tmp/w0');
  assert.equal(src.steps[0].checkpointState!.env.FORKVAR, 'zero');
  assert.deepEqual(src.steps[0].checkpointState!.droppedEnv, ['MY_API_KEY']);
  // (The command text itself holds it, as the agent wrote it; the shell state must not copy it.)
  const written = (await readTrajectory(src.trajectoryPath)).steps.map((s) => s.checkpointState);
  assert.ok(!JSON.stringify(written).includes(SECRET), 'the secret value is not in any checkpoint state');

  const forkPolicy = new RecordingPolicy({ 1: PROBE, 2: FINISH });
  const fork = await forkRunOk({ trajectoryPath: src.trajectoryPath, step: 0, outDir: join(scratch, 'fork'), env, cwd: scratch, policyOverride: forkPolicy, checkpoint: true });
  runIds.push(fork.runId);
  assert.deepEqual(fork.header.forkedFrom, { runId: src.runId, step: 0, trajectory: src.trajectoryPath });
  assert.equal(fork.footer.endReason, 'finished');

  const t = await readTrajectory(fork.trajectoryPath);
  assert.deepEqual(t.header.forkedFrom, fork.header.forkedFrom);
  assert.deepEqual(t.steps.map((s) => s.index), [0, 1, 2]);
  assert.deepEqual(t.steps[0], src.steps[0], 'step 0 is copied verbatim');
  const out = t.steps[1].actions[0].observation;
  assert.match(out, /\ba\b/);
  assert.doesNotMatch(out, /\bb\b/, 'step 1 of the source never happened in the fork');
  assert.match(out, /\/tmp\/w0/, 'cwd restored');
  assert.match(out, /var=zero key=unset/, 'exported env restored, the secret one not');
  // The policy sees exactly the conversation the source run's policy saw before step 1.
  assert.deepEqual(forkPolicy.seen.get(1), sourcePolicy.seen.get(1));
  assert.deepEqual(t.steps[1].todos, [{ id: 1, content: 'plan item', done: false }]);
  assert.deepEqual(t.steps[1].scratchpad, ['note from step 0']);
  assert.ok(t.footer?.reward, 'the fork is rewarded');
  assert.equal(typeof t.footer?.reward?.total, 'number');
  assert.equal(t.footer?.steps, 3);

  // The checkpoint images are gone: a fork then says why and what to do.
  for (const runId of [fork.runId, src.runId]) {
    const imgs = await docker.listImages({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, 'dev.tbrl.kind=checkpoint'] } });
    for (const img of imgs) await docker.getImage(img.Id).remove({ force: true });
  }
  await assert.rejects(
    forkRunOk({ trajectoryPath: src.trajectoryPath, step: 0, outDir: join(scratch, 'gone'), env, cwd: scratch, policyOverride: new ScriptedPolicy([]) }),
    (err: unknown) => err instanceof TbrlError && err.code === 'fork-checkpoint-gone' && /--checkpoint/.test(err.fix ?? ''),
  );
});

test('a run without checkpoints cannot be forked, and says how to get one', async () => {
  const src = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'nocp'), env, cwd: scratch, policyOverride: new ScriptedPolicy([FINISH]), skipReward: true });
  await assert.rejects(forkRunOk({ trajectoryPath: src.trajectoryPath, step: 0, env, cwd: scratch }), (err: unknown) => err instanceof TbrlError && err.code === 'fork-no-checkpoint' && /checkpoint": true/.test(err.fix ?? ''));
  await assert.rejects(forkRunOk({ trajectoryPath: src.trajectoryPath, step: 5, env, cwd: scratch }), (err: unknown) => err instanceof TbrlError && err.code === 'fork-step' && /--step 0/.test(err.fix ?? ''));
});

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve('src/cli/main.ts'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((res) => child.on('exit', (code) => res({ code, stdout, stderr })));
}

test('`tbrl run --fork-from <trajectory> --step K` forks from the command line; a bad --step is a usage error', async () => {
  const src = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'cli-src'), env, cwd: scratch, policyOverride: new ScriptedPolicy([STEP0, FINISH]), checkpoint: true, skipReward: true });
  runIds.push(src.runId);
  const out = join(scratch, 'cli-fork');
  const r = await cli(['run', '--fork-from', src.trajectoryPath, '--step', '0', '--policy', 'oracle', '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Reward:\s+\d/);
  const t = await readTrajectory(join(out, 'trajectory.jsonl'));
  assert.deepEqual(t.header.forkedFrom, { runId: src.runId, step: 0, trajectory: src.trajectoryPath });
  assert.deepEqual(t.steps[0], src.steps[0]);
  assert.ok(t.steps.length > 1 && t.footer?.reward);

  const bad = await cli(['run', '--fork-from', src.trajectoryPath, '--step', 'two']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /--step K[\s\S]*e\.g\. --fork-from/);
});
