import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeEvalTasks } from '../helpers/eval-fixture';
import { resolveTaskSources } from '../../src/core/eval/sources';
import { computeResults, readTrials, TRIAL_SCHEMA, writeJsonAtomic, type JobConfig, type TrialRecord } from '../../src/core/eval/job';
import { runEvalJob, type TrialBackend } from '../../src/core/eval/run-job';
import type { TrialSpec } from '../../src/core/eval/trial';
import type { OutcomeClass } from '../../src/core/run/outcome';
import { TbrlError } from '../../src/core/errors';

function record(spec: TrialSpec, cls: OutcomeClass, reward?: number): TrialRecord {
  const now = new Date().toISOString();
  return { schema: TRIAL_SCHEMA, trial: spec.trial, task: spec.task.name, attempt: spec.attempt, outcome: { class: cls, ...(cls === 'passed' ? {} : { cause: cls }) }, ...(reward !== undefined ? { reward } : {}), tokens: { prompt: 10, completion: 5 }, wallSec: 1, startedAt: now, endedAt: now, retries: spec.retries };
}

/** A backend standing in for Docker (the integration tests run the real one): outcomes by trial name, every run counted. */
function scripted(outcome: (spec: TrialSpec, run: number) => OutcomeClass | 'cut', runs: Map<string, number>): TrialBackend {
  return {
    name: 'scripted',
    async run(trials, hooks) {
      for (const spec of trials) {
        hooks.onStart(spec);
        const n = (runs.get(spec.trial) ?? 0) + 1;
        runs.set(spec.trial, n);
        mkdirSync(spec.dir, { recursive: true });
        writeFileSync(join(spec.dir, 'trajectory.jsonl'), `run ${n}\n`);
        const cls = outcome(spec, n);
        await hooks.onDone(spec, cls === 'cut' ? undefined : record(spec, cls, cls === 'passed' ? 1 : cls === 'failed' ? 0 : undefined));
      }
    },
  };
}

test('task sources: task dirs, dataset trees, globs, list files, filters and name clashes', async () => {
  const root = makeEvalTasks(['pass-a', 'pass-b', 'fail-c']);
  const nested = join(root, 'dataset', 'v1');
  makeEvalTasks(['pass-a', 'pass-z'], nested);
  const names = async (inputs: string[], opts = {}): Promise<string[]> => (await resolveTaskSources(inputs, { cwd: root, ...opts })).map((s) => s.name);
  assert.deepEqual(await names(['pass-a']), ['pass-a']);
  // A dataset dir: task dirs at any depth, a clash of names disambiguated by the parent.
  const all = await names(['.']);
  assert.equal(all.length, 5);
  assert.deepEqual(all.filter((n) => !n.endsWith('__pass-a')), ['fail-c', 'pass-b', 'pass-z']);
  assert.ok(all.includes('v1__pass-a'));
  assert.deepEqual(await names(['pass-*']), ['pass-a', 'pass-b']);
  assert.deepEqual(await names(['dataset/**']), ['pass-a', 'pass-z']);
  writeFileSync(join(root, 'list.txt'), '# two tasks\npass-b\n\nfail-c\n');
  assert.deepEqual(await names(['list.txt']), ['fail-c', 'pass-b']);
  assert.deepEqual(await names(['pass-a', 'pass-b', 'fail-c'], { include: ['pass-*'], exclude: ['*-b'] }), ['pass-a']);
  assert.deepEqual(await names(['pass-a', 'pass-b', 'fail-c'], { nTasks: 2 }), ['fail-c', 'pass-a']);
  await assert.rejects(resolveTaskSources(['missing'], { cwd: root }), (e: TbrlError) => e.code === 'eval-source-missing');
  await assert.rejects(resolveTaskSources(['pass-a'], { cwd: root, include: ['nothing'] }), (e: TbrlError) => e.code === 'eval-no-tasks');
});

test('results: masked trials leave the rates, pass@k per task and overall, tokens and cost', () => {
  const job = { run: { attempts: 3, trace: true, checkpoint: false, timeoutMultiplier: 1 }, tasks: [{ name: 'a' }, { name: 'b' }] } as unknown as JobConfig;
  const mk = (task: string, attempt: number, cls: OutcomeClass, reward?: number, costUsd?: number): TrialRecord => ({ schema: TRIAL_SCHEMA, trial: `${task}__${attempt}`, task, attempt, outcome: { class: cls }, reward, tokens: { prompt: 100, completion: 10 }, costUsd, wallSec: 2, startedAt: '', endedAt: '', retries: 0 });
  const r = computeResults(job, [mk('a', 1, 'passed', 1, 0.5), mk('a', 2, 'failed', 0), mk('a', 3, 'environment_error'), mk('b', 1, 'failed', 0.5), mk('b', 2, 'agent_timeout', 0), mk('b', 3, 'failed', 0)], 10);
  const a = r.tasks.find((t) => t.task === 'a')!;
  assert.equal(a.scored, 2);
  assert.equal(a.masked, 1);
  assert.equal(a.passAtK[1], 0.5);
  assert.equal(a.passAtK[2], 1);
  assert.equal(a.passAtK[3], null); // only 2 scored trials: pass@3 is undefined, not a guess
  assert.equal(a.meanReward, 0.5); // the masked trial counts neither as 0 nor at all
  assert.equal(r.overall.passAtK[1], 0.25);
  assert.equal(r.overall.passAtK[2], 0.5);
  assert.equal(r.overall.passAtK[3], 0); // only b has 3 scored trials
  assert.equal(r.overall.masked, 1);
  assert.equal(r.overall.outcomes.environment_error, 1);
  assert.equal(r.overall.outcomes.agent_timeout, 1);
  assert.deepEqual(r.overall.tokens, { prompt: 600, completion: 60 });
  assert.equal(r.overall.costUsd, 0.5);
  assert.equal(r.complete, true);
});

test('atomic JSON writes leave no temporary file and replace the old content whole', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-eval-atomic-'));
  writeJsonAtomic(join(dir, 'r.json'), { a: 1 });
  writeJsonAtomic(join(dir, 'r.json'), { a: 2 });
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')), { a: 2 });
  assert.deepEqual(readdirSync(dir), ['r.json']);
});

test('resume: missing and cut-off trials run, infra ones are retried and kept aside, completed ones never run again', async () => {
  const root = makeEvalTasks(['pass-a', 'fail-b']);
  const jobDir = join(root, 'job');
  const runs = new Map<string, number>();
  // First invocation: a__2 is cut off (interrupted), b__1 hits an environment error (retried once in-run, fails again).
  const first = await runEvalJob({
    cwd: root, inputs: ['pass-a', 'fail-b'], jobDir, run: { attempts: 2, policy: 'oracle' }, concurrency: 1,
    backend: scripted((s) => (s.trial === 'pass-a__2' ? 'cut' : s.trial === 'fail-b__1' ? 'environment_error' : s.task.name.startsWith('pass') ? 'passed' : 'failed'), runs),
  });
  assert.equal(runs.get('fail-b__1'), 2, 'an infra-class trial is retried once within the run');
  assert.equal(first.results.overall.trials, 3);
  assert.equal(first.results.complete, false);
  assert.ok(existsSync(join(jobDir, 'retried', 'fail-b__1.1', 'trial.json')), 'the earlier try is kept, not deleted');
  const before = readFileSync(join(jobDir, 'trials', 'pass-a__1', 'trial.json'), 'utf8');

  // A resume with a different model names what differs and runs nothing.
  await assert.rejects(runEvalJob({ cwd: root, resume: jobDir, run: { model: 'other', attempts: 2 }, concurrency: 1, backend: scripted(() => 'passed', runs) }),
    (e: TbrlError) => e.code === 'eval-config-mismatch' && /model: the job has nothing, the command line says "other"/.test(e.message));

  const second = await runEvalJob({ cwd: root, resume: jobDir, run: {}, concurrency: 2, backend: scripted((s) => (s.task.name.startsWith('pass') ? 'passed' : 'failed'), runs) });
  assert.deepEqual(Object.fromEntries(runs), { 'pass-a__1': 1, 'pass-a__2': 2, 'fail-b__1': 3, 'fail-b__2': 1 });
  assert.equal(readFileSync(join(jobDir, 'trials', 'pass-a__1', 'trial.json'), 'utf8'), before, 'a completed trial is untouched');
  assert.equal(second.results.complete, true);
  assert.equal(second.results.overall.masked, 0);
  assert.equal(readTrials(jobDir).get('fail-b__1')!.retries, 2);
  assert.equal(second.results.overall.passAtK[1], 0.5);

  // Nothing left: a third resume runs nothing at all.
  const third = await runEvalJob({ cwd: root, resume: jobDir, run: {}, concurrency: 2, backend: scripted(() => 'passed', runs) });
  assert.equal([...runs.values()].reduce((a, b) => a + b, 0), 7);
  assert.equal(third.results.overall.trials, 4);

  // A task that changed under the job is refused, naming it.
  writeFileSync(join(root, 'fail-b', 'solution.sh'), 'echo changed\n');
  const jobDir2 = join(root, 'job2');
  await runEvalJob({ cwd: root, inputs: ['fail-b'], jobDir: jobDir2, run: {}, concurrency: 1, backend: scripted((_s) => 'cut', runs) });
  writeFileSync(join(root, 'fail-b', 'solution.sh'), 'echo changed again\n');
  await assert.rejects(runEvalJob({ cwd: root, resume: jobDir2, run: {}, concurrency: 1, backend: scripted(() => 'passed', runs) }), (e: TbrlError) => e.code === 'eval-config-mismatch' && /fail-b: the files/.test(e.message));
});

test('retry classes must be masked ones: retrying a failure would bias the rate', async () => {
  const root = makeEvalTasks(['pass-a']);
  await assert.rejects(runEvalJob({ cwd: root, inputs: ['pass-a'], jobDir: join(root, 'j'), run: {}, concurrency: 1, retry: { classes: ['failed'] }, backend: scripted(() => 'passed', new Map()) }), (e: TbrlError) => e.code === 'eval-retry-class');
});
