/**
 * `tbrl eval` as a user runs it, on real Docker with the oracle policy: a job over two tasks × two
 * attempts at concurrency 2, SIGKILLed after its first trial, then resumed: every trial ends exactly
 * once, the completed one is untouched, the job directory holds the native and the Harbor layout.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeEvalTasks } from '../helpers/eval-fixture';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_PID } from '../../src/core/sandbox/types';
import { readTrials, type JobResults } from '../../src/core/eval/job';

const CLI = resolve('src/cli/main.ts');
const root = makeEvalTasks(['pass-a', 'fail-b']);
after(() => rmSync(root, { recursive: true, force: true }));

function env(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}) };
}

async function removeContainersOf(pid: number): Promise<void> {
  const docker = new DockerSandboxProvider().docker;
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABEL_PID}=${pid}`] } });
  await Promise.all(list.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
}

test('eval: SIGKILL after the first trial, resume runs only the rest; results, summary, compare, ATIF and Harbor layout', { timeout: 170_000 }, async () => {
  const job = join(root, 'job');
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'eval', join(root, 'pass-a'), join(root, 'fail-b'), '--attempts', '2', '--concurrency', '2', '--policy', 'oracle', '--job-dir', job, '--export', 'atif', '--layout', 'harbor', '--json'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const firstEnd = await new Promise<string>((res, rej) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.includes('"type":"trial-end"'));
      if (line) res(line);
    });
    child.on('exit', (code) => rej(new Error(`eval exited (${code}) before a trial ended:\n${stderr}`)));
  });
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  await removeContainersOf(child.pid!);
  const killedTrial = (JSON.parse(firstEnd) as { trial: string }).trial;
  const done = readTrials(job);
  assert.ok(done.has(killedTrial), 'the trial that ended before the kill is on disk');
  const keptRecord = readFileSync(join(job, 'trials', killedTrial, 'trial.json'), 'utf8');
  const results1 = JSON.parse(readFileSync(join(job, 'results.json'), 'utf8')) as JobResults;
  assert.equal(results1.complete, false);
  assert.ok(results1.overall.trials >= 1 && results1.overall.trials < 4);

  // A resume with another setting is refused and names it.
  const mismatch = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'eval', '--resume', job, '--attempts', '3'], { env: env(), encoding: 'utf8' });
  assert.equal(mismatch.status, 1);
  assert.match(mismatch.stderr, /attempts: the job has 2, the command line says 3/);

  const t0 = Date.now();
  const resumed = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'eval', '--resume', job, '--concurrency', '2', '--json'], { env: env(), encoding: 'utf8', timeout: 120_000 });
  assert.equal(resumed.status, 0, resumed.stderr);
  const events = resumed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; trial?: string; toRun?: number; alreadyDone?: number });
  const start = events.find((e) => e.type === 'job-start')!;
  assert.equal(start.alreadyDone, done.size);
  const ran = events.filter((e) => e.type === 'trial-start').map((e) => e.trial);
  assert.ok(!ran.includes(killedTrial), 'a completed trial never runs twice');
  assert.equal(ran.length + done.size, 4);
  assert.ok(Date.now() - t0 < 120_000);
  // The containers the trials shared (trace baseline, originals) went with the job: nothing of it is left.
  const left = await new DockerSandboxProvider().docker.listContainers({ all: true, filters: { label: [`${LABEL_PID}=${resumed.pid}`] } });
  assert.deepEqual(left.map((c) => c.Labels['dev.tbrl.kind']), [], 'no container of the finished job is left');

  assert.equal(readFileSync(join(job, 'trials', killedTrial, 'trial.json'), 'utf8'), keptRecord);
  const results = JSON.parse(readFileSync(join(job, 'results.json'), 'utf8')) as JobResults;
  assert.equal(results.complete, true);
  assert.deepEqual(results.trials.map((t) => `${t.trial}:${t.outcome}`).sort(), ['fail-b__1:failed', 'fail-b__2:failed', 'pass-a__1:passed', 'pass-a__2:passed']);
  assert.equal(results.overall.passAtK[1], 0.5);
  assert.equal(results.overall.passAtK[2], 0.5);
  assert.equal(results.tasks.find((t) => t.task === 'pass-a')!.meanReward, 1);
  const jobJson = JSON.parse(readFileSync(join(job, 'job.json'), 'utf8'));
  assert.equal(jobJson.run.attempts, 2);
  assert.ok(jobJson.versions.promptVersion && jobJson.tasks.every((t: { image: string; contentHash: string }) => t.image && t.contentHash));
  for (const t of readdirSync(join(job, 'trials'))) {
    for (const f of ['trajectory.jsonl', 'report.md', 'trial.json', 'trajectory.atif.json']) assert.ok(existsSync(join(job, 'trials', t, f)), `${t}/${f}`);
    assert.match(JSON.parse(readFileSync(join(job, 'trials', t, 'trajectory.atif.json'), 'utf8')).schema_version, /^ATIF-v/);
    assert.equal(readFileSync(join(job, 'harbor', t, 'verifier', 'reward.txt'), 'utf8').trim(), t.startsWith('pass') ? '1' : '0');
  }
  const harbor = JSON.parse(readFileSync(join(job, 'harbor', 'result.json'), 'utf8'));
  assert.equal(harbor.stats.n_completed_trials, 4);
  // Harbor's own models (harbor 0.25 in .venv/harbor, made by scripts/setup.sh) parse the layout.
  const check = spawnSync(resolve('.venv/harbor/bin/python'), ['-c', [
    'import sys, pathlib',
    'from harbor.models.job.result import JobResult',
    'from harbor.models.trial.result import TrialResult',
    'root = pathlib.Path(sys.argv[1])',
    'job = JobResult.model_validate_json((root / "result.json").read_text())',
    'trials = [TrialResult.model_validate_json(p.read_text()) for p in sorted(root.glob("*/result.json"))]',
    'print(len(trials), sum(t.verifier_result.rewards["reward"] for t in trials), list(job.stats.evals.values())[0].n_trials)',
  ].join('\n'), join(job, 'harbor')], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stderr);
  assert.equal(check.stdout.trim(), '4 2 4');

  const summary = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'eval', '--summary', job], { env: env(), encoding: 'utf8' });
  assert.equal(summary.status, 0, summary.stderr);
  assert.match(summary.stdout, /pass-a\s+2\s+0\s+1\.000\s+100\.0%\s+100\.0%/);
  assert.match(summary.stdout, /Outcomes: passed 2, failed 2/);

  const compare = spawnSync(process.execPath, ['--import', 'tsx', CLI, 'eval', 'compare', job, job, '--seed', '3'], { env: env(), encoding: 'utf8' });
  assert.equal(compare.status, 0, compare.stderr);
  assert.match(compare.stdout, /0\.0 pts over 2 tasks, 95% CI \[0\.0, 0\.0\]/);
  assert.match(compare.stdout, /No task flipped/);
});
