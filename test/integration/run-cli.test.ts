/**
 * The `tbrl run` command as a user runs it: a child process, progress on stderr, a summary on
 * stdout, and a trajectory that survives SIGKILL with every completed step.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { startOpenAIServer } from '../helpers/openai-server';

const EXAMPLE = resolve('examples/hello-world');
const CLI = resolve('src/cli/main.ts');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-run-cli-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}), ...extra };
}

async function removeRunContainers(runId: string): Promise<void> {
  const docker = new DockerSandboxProvider().docker;
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`] } });
  await Promise.all(list.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true })));
}

test('a SIGKILLed `tbrl run` leaves a readable trajectory with the steps completed before the kill', async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  srv.enqueue('<bash>\ncmd: echo first > /tmp/one\n</bash>', '<bash>\ncmd: cat /tmp/one\n</bash>');
  // From the third step on the model keeps the container busy, so the kill lands mid-step.
  srv.respond = () => '<bash>\ncmd: sleep 60\n</bash>';
  const out = join(scratch, 'killed');
  const trajectory = join(out, 'trajectory.jsonl');
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'run', EXAMPLE, '--out', out, '--base-url', srv.baseUrl, '--model', 'm'], {
    env: cleanEnv({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<NodeJS.Signals | null>((res) => child.on('exit', (_code, signal) => res(signal)));
  let runId: string | undefined;
  try {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const lines = existsSync(trajectory) ? readFileSync(trajectory, 'utf8').split('\n').filter(Boolean) : [];
      if (lines.length >= 3) break; // header + 2 steps
      if (child.exitCode !== null) assert.fail(`tbrl run exited early (${child.exitCode}):\n${stderr}`);
      if (Date.now() > deadline) assert.fail(`no 2 steps within 90 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    const t = await readTrajectory(trajectory);
    runId = t.header.runId;
    assert.equal(t.footer, undefined);
    assert.ok(t.steps.length >= 2);
    assert.equal(t.steps[0].actions[0].exitCode, 0);
    assert.match(t.steps[1].actions[0].observation, /first/);
    assert.ok(t.warnings.some((w) => /interrupted/.test(w)));
    assert.match(stderr, /step 0 .*bash/);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await srv.close();
    // The killed process could not close its container; remove exactly the containers of this run.
    const header = existsSync(trajectory) ? (JSON.parse(readFileSync(trajectory, 'utf8').split('\n')[0]) as { runId: string }) : undefined;
    if (runId ?? header?.runId) await removeRunContainers((runId ?? header?.runId)!);
  }
});

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => res({ code, stdout, stderr }));
  });
}

test('`tbrl run` with no endpoint and no cached model says it uses the oracle, shows progress and a summary; `tbrl replay` reads the result', async () => {
  const out = join(scratch, 'oracle');
  const run = await runCli(['run', EXAMPLE, '--out', out], cleanEnv({ TBRL_MODEL_DIR: '/nonexistent/tbrl-models' }));
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /no model endpoint configured .*using the oracle policy/);
  assert.match(run.stderr, /step 0 \([\d.]+ s\): bash ".+" → exit 0, \d+ ms/);
  assert.match(run.stdout, /Reward: +1\.000 \(tests 1\.000\)/);
  assert.match(run.stdout, /Steps: +\d+ \(ended: finished/);
  assert.match(run.stdout, new RegExp(`Trajectory: +${join(out, 'trajectory.jsonl').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.ok(existsSync(join(out, 'report.md')));
  assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /\| Reward \| 1\.000 \|/);

  const replay = await runCli(['replay', out], cleanEnv({}));
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(replay.stdout, /── step 1/);
  assert.match(replay.stdout, /Reward: 1\.000/);
  const atif = await runCli(['replay', join(out, 'trajectory.jsonl'), '--format', 'atif'], cleanEnv({}));
  assert.equal(JSON.parse(atif.stdout).schema_version, 'ATIF-v1.7');

  const bad = await runCli(['run', EXAMPLE, '--policy', 'model'], cleanEnv({ TBRL_MODEL_DIR: '/nonexistent/tbrl-models' }));
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /needs an OpenAI-compatible endpoint[\s\S]*local default model is not in the cache[\s\S]*Fix: [\s\S]*--base-url/);
});

test('Ctrl-C (SIGINT) stops a running step at once, closes the container and writes an interrupted footer', async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  srv.enqueue('<bash>\ncmd: echo first\n</bash>');
  srv.respond = () => '<bash>\ncmd: sleep 120\n</bash>';
  const out = join(scratch, 'interrupted');
  const trajectory = join(out, 'trajectory.jsonl');
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'run', EXAMPLE, '--out', out, '--base-url', srv.baseUrl, '--model', 'm'], { env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  try {
    const deadline = Date.now() + 90_000;
    // Header + step 0, then give step 1 (sleep 120) time to start.
    while (!(existsSync(trajectory) && readFileSync(trajectory, 'utf8').split('\n').filter(Boolean).length >= 2)) {
      if (child.exitCode !== null) assert.fail(`tbrl run exited early:\n${stderr}`);
      if (Date.now() > deadline) assert.fail(`no step within 90 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    while (srv.requests.length < 2) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 500));
    const sent = Date.now();
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    assert.ok(Date.now() - sent < 30_000, 'did not wait for the 120 s command');
    const t = await readTrajectory(trajectory);
    assert.equal(t.footer?.endReason, 'interrupted');
    assert.equal(t.steps.length, 1);
    assert.equal(t.footer?.reward, undefined, 'an interrupted run is not scored');
    const docker = new DockerSandboxProvider().docker;
    const left = await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${t.header.runId}`] } });
    assert.equal(left.length, 0, 'the run removed its containers');
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await srv.close();
  }
});

test('`tbrl run --attempts 2 --select refine` shows attempt 2 a summary of attempt 1 and keeps the better one', async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  // Attempt 1 gives up at once (reward 0); attempt 2 runs the reference solution (reward 1).
  const solution = readFileSync(join(EXAMPLE, 'solution.sh'), 'utf8');
  srv.respond = (req) => {
    const first = req.messages.find((m) => m.role === 'user')?.content ?? '';
    if (!first.includes('<previous_attempt>')) return '<finish>\nmessage: giving up\n</finish>';
    return req.messages.length <= 2 ? `<bash>\ncmd: |\n${solution.split('\n').map((l) => `  ${l}`).join('\n')}\n</bash>` : '<finish>\nmessage: done\n</finish>';
  };
  const out = join(scratch, 'refine');
  try {
    const run = await runCli(['run', EXAMPLE, '--out', out, '--base-url', srv.baseUrl, '--model', 'm', '--attempts', '2', '--select', 'refine'], cleanEnv({}));
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Attempts: +1:0 +2:1/);
    assert.match(run.stdout, /Selected: +attempt 2/);
    const secondPrompt = srv.requests.find((r) => r.messages.some((m) => m.content.includes('<previous_attempt>')));
    assert.ok(secondPrompt, 'attempt 2 saw a summary of attempt 1');
    assert.match(secondPrompt.messages[1].content, /Ended: finished — giving up after 1 steps\. Reward 0/);
    const summary = JSON.parse(readFileSync(join(out, 'attempts.json'), 'utf8')) as { select: string; selected: number; attempts: Array<{ reward: number }> };
    assert.equal(summary.select, 'refine');
    assert.equal(summary.selected, 1);
    assert.deepEqual(summary.attempts.map((a) => a.reward), [0, 1]);
    assert.ok(existsSync(join(out, 'attempt-1', 'trajectory.jsonl')) && existsSync(join(out, 'attempt-2', 'trajectory.jsonl')));
  } finally {
    await srv.close();
  }
});

test('`tbrl run --judge` with a judge answering HTTP 500 says so on the summary line, without a listener-leak warning', async () => {
  const srv = await startOpenAIServer({ models: ['judge'] });
  srv.respond = () => ({ status: 500, error: { message: 'judge backend down' } });
  const out = join(scratch, 'judge-500');
  try {
    const run = await runCli(['run', EXAMPLE, '--out', out, '--policy', 'oracle', '--base-url', srv.baseUrl, '--judge', 'judge'], cleanEnv({}));
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Reward: +1\.000 \(tests 1\.000; judge: failed after 2 attempts \(HTTP 500\) — reward is tests only\)/);
    assert.ok(srv.calls >= 8, `the judge retried (${srv.calls} calls)`);
    assert.doesNotMatch(run.stderr, /MaxListenersExceededWarning/);
  } finally {
    await srv.close();
  }
});
