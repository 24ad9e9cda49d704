/**
 * `runTask` end to end against real Docker: the bundled example task, built offline from the
 * stand-in base image, in a real container; the model through the real `openai` client against
 * the local OpenAI-compatible test server.
 */
import { runTaskOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { oracleTurns } from '../../src/core/agent/oracle';
import { loadTask } from '../../src/core/tasks/load';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { startOpenAIServer } from '../helpers/openai-server';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { runTask } from '../../src/core/run/run-task';
import { TbrlError } from '../../src/core/errors';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-run-it-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let runs = 0;
const outDir = () => join(scratch, `run-${runs++}`);
// No endpoint from the developer's shell may leak into these runs.
// Nor the cached local default model: these runs check the oracle fallback when neither exists.
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST, TBRL_MODEL_DIR: '/nonexistent/tbrl-models' } as NodeJS.ProcessEnv;

test('the oracle policy solves the example task in a real container and gets test reward 1', async () => {
  const progress: string[] = [];
  const r = await runTaskOk({ taskDir: EXAMPLE, outDir: outDir(), env, cwd: scratch, onProgress: (e) => progress.push(e.type === 'info' ? e.message : e.type) });
  assert.equal(r.header.policy.kind, 'oracle');
  assert.ok(progress.some((m) => /no model endpoint configured.*oracle/.test(m)), 'the run says it fell back to the oracle');
  assert.equal(r.footer.endReason, 'finished');
  assert.equal(r.footer.reward?.tests, 1, JSON.stringify(r.footer.reward));
  assert.equal(r.footer.reward?.total, 1);
  assert.ok(r.steps.length >= 2, 'the solution ran as several commands');
  assert.ok(r.steps.every((s) => s.actions.filter((a) => a.kind === 'bash').every((a) => a.exitCode === 0)));
  const t = await readTrajectory(r.trajectoryPath);
  assert.equal(t.steps.length, r.steps.length);
  assert.equal(t.footer?.reward?.total, 1);
  assert.equal(t.header.versions.promptVersion, 'v1');
  assert.ok(t.footer?.depgpo, 'DepGPO ran');
  assert.equal(t.footer?.depgpo?.factors.length, t.steps.length);
});

test('a scripted policy that finishes at once gets reward 0', async () => {
  const r = await runTaskOk({ taskDir: EXAMPLE, outDir: outDir(), env, cwd: scratch, policyOverride: new ScriptedPolicy(['<finish>\nmessage: nothing to do\n</finish>']) });
  assert.equal(r.footer.endReason, 'finished');
  assert.equal(r.steps.length, 1);
  assert.equal(r.footer.reward?.total, 0);
  assert.ok(r.footer.reward?.testOutcomes?.every((o) => o.status !== 'passed'));
});

test('malformed YAML gets an error observation and the run recovers on the next turn', async () => {
  const bad = '<bash>\ncmd: "echo unterminated\n</bash>';
  const good = '<bash>\ncmd: echo recovered\n</bash>';
  const r = await runTaskOk({ taskDir: EXAMPLE, outDir: outDir(), env, cwd: scratch, policyOverride: new ScriptedPolicy([bad, good, '<finish>\nmessage: done\n</finish>']) });
  assert.equal(r.footer.endReason, 'finished');
  const t = await readTrajectory(r.trajectoryPath);
  // The error is recorded in its place among the turn's items, and listed with the parse errors.
  assert.deepEqual(t.steps[0].actions.map((a) => [a.kind, a.ok]), [['parse_error', false]]);
  assert.equal(t.steps[0].parseErrors.length, 1);
  assert.equal(t.steps[0].parseErrors[0], t.steps[0].actions[0].observation);
  assert.match(t.steps[0].parseErrors[0], /<bash>[\s\S]*(YAML|yaml)[\s\S]*A correct example/);
  assert.equal(t.steps[1].actions[0].exitCode, 0);
  assert.match(t.steps[1].actions[0].observation, /recovered/);
  assert.deepEqual(t.steps[1].parseErrors, []);
});

test('a model run through the local OpenAI-compatible server drives the real openai client end to end (judge included)', async () => {
  const srv = await startOpenAIServer({ models: ['scripted-model', 'judge-model'], apiKey: 'test-key' });
  // Used once the scripted turns are spent: only the judge asks then.
  const half = { action_output_success: 0.5, todo_planning: 0.5, phase_adherence: 0.5, tool_use: 0.5 };
  srv.respond = () => '```json\n' + JSON.stringify({ components: half, caps: [], penalties: { overthinking: 0, gaming: 0, phase_violations: 0 }, rationale: 'ok' }) + '\n```';
  try {
    const task = await loadTask(EXAMPLE);
    // The model answers with the reference solution's turns, after a first turn that explores read-only.
    srv.enqueue('<think>look first</think>\n<search>\naction: ls\npath: /app/data\n</search>', ...oracleTurns(task).turns);
    const r = await runTaskOk({
      taskDir: EXAMPLE, outDir: outDir(), cwd: scratch,
      env: { ...env, OPENAI_BASE_URL: srv.baseUrl, OPENAI_API_KEY: 'test-key', TBRL_MODEL: 'scripted-model', TBRL_JUDGE_MODEL: 'judge-model' },
    });
    assert.equal(r.header.policy.kind, 'model');
    assert.equal(r.header.policy.model, 'scripted-model');
    assert.equal(r.footer.endReason, 'finished');
    assert.equal(r.footer.reward?.tests, 1);
    const judge = r.footer.reward?.judge;
    assert.ok(judge && 'score' in judge, JSON.stringify(judge));
    assert.equal(judge.score, 0.5);
    assert.ok(Math.abs((r.footer.reward?.total ?? 0) - (0.65 + 0.35 * 0.5)) < 1e-9, `total ${r.footer.reward?.total}`);
    const agentRequests = srv.requests.filter((q) => q.body.model === 'scripted-model');
    assert.equal(agentRequests.length, r.steps.length);
    assert.equal(srv.requests.filter((q) => q.body.model === 'judge-model').length, 1);
    const first = srv.requests[0].messages;
    assert.equal(first[0].role, 'system');
    assert.match(first[0].content, /<bash>/);
    assert.match(first[1].content, /wordfreq/);
    // The second call carries the first turn and its observation (the ls of /app/data).
    const second = srv.requests[1].messages;
    assert.equal(second[2].role, 'assistant');
    assert.match(second[3].content, /input\.txt/);
    assert.ok(r.footer.usage.promptTokens > 0 && r.footer.usage.completionTokens > 0, 'usage from the server is recorded');
    assert.equal(srv.requests[0].authorization, 'Bearer test-key');
  } finally {
    await srv.close();
  }
});

test('--n 2 with a listwise verifier: both candidates are kept, the verifier picks the one that runs', async () => {
  const srv = await startOpenAIServer({ models: ['gen'] });
  let generatorCalls = 0;
  srv.respond = (req) => {
    if (/^You are the verifier/.test(req.messages[0]?.content ?? '')) return 'B is the only candidate that acts.\nRANKING: B > A';
    generatorCalls++;
    return generatorCalls === 1
      ? ['<finish>\nmessage: giving up\n</finish>', '<bash>\ncmd: echo picked-by-verifier\n</bash>']
      : ['<finish>\nmessage: done now\n</finish>', '<finish>\nmessage: also done\n</finish>'];
  };
  try {
    const r = await runTaskOk({ taskDir: EXAMPLE, outDir: outDir(), cwd: scratch, env, baseUrl: srv.baseUrl, model: 'gen', n: 2, verifier: 'listwise' });
    assert.deepEqual(r.header.verifier, { mode: 'listwise', n: 2, model: 'gen' });
    const [s0] = r.steps;
    assert.equal(s0.candidates.length, 2);
    assert.equal(s0.decision?.mode, 'listwise');
    assert.equal(s0.decision?.chosen, 1);
    assert.match(s0.actions[0].observation, /picked-by-verifier/);
    assert.equal(r.footer.endReason, 'finished');
    assert.ok(r.footer.usage.verifierCalls >= 2, `verifier calls ${r.footer.usage.verifierCalls}`);
  } finally {
    await srv.close();
  }
});

test('a model error mid-run still closes the sandbox and leaves a trajectory whose footer says error', async () => {
  const srv = await startOpenAIServer({ models: ['m'], apiKey: 'right-key' });
  srv.enqueue('<bash>\ncmd: echo before-the-error\n</bash>');
  // The second call is answered 401: a bad key is not retried, so the run fails at step 1.
  srv.respond = () => ({ status: 401, error: { message: 'invalid api key' } });
  try {
    // The failed run comes back as a value: its result and, beside it, the error.
    const { result, error } = await runTask({ taskDir: EXAMPLE, outDir: outDir(), cwd: scratch, env: { ...env, OPENAI_BASE_URL: srv.baseUrl, OPENAI_API_KEY: 'right-key', TBRL_MODEL: 'm' } });
    assert.ok(error instanceof TbrlError, 'the run reports its error');
    assert.match(error.message, /key|401|auth/i);
    const t = await readTrajectory(result.trajectoryPath);
    assert.equal(t.footer?.endReason, 'error');
    assert.match(t.footer?.endMessage ?? '', /key|401|auth/i);
    assert.equal(t.steps.length, 1);
    const left = await new DockerSandboxProvider().docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${t.header.runId}`] } });
    assert.equal(left.length, 0, 'the sandbox was closed despite the error');
  } finally {
    await srv.close();
  }
});
