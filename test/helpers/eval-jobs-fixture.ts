import { copyFileSync, mkdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { JOB_SCHEMA, TRIAL_SCHEMA, computeResults, trialDir, trialName, writeJsonAtomic, type JobConfig, type TrialRecord } from '../../src/core/eval/job';
import type { OutcomeClass } from '../../src/core/run/outcome';

/** The recorded oracle run of examples/hello-world: every fixture trial's trajectory is a copy of it. */
export const FIXTURE_TRAJECTORY = join(process.cwd(), 'test/e2e/fixtures/hello-world-oracle/trajectory.jsonl');

/**
 * Writes a finished (or, with fewer outcomes than attempts, partial) eval job through the core's own
 * writers: job.json, trials/<task>__<k>/{trial.json, trajectory.jsonl}, results.json. `outcomes`
 * maps each task to its trials' classes in attempt order.
 */
export function writeEvalJob(jobDir: string, outcomes: Record<string, OutcomeClass[]>, options: { attempts?: number; model?: string; mtime?: Date } = {}): JobConfig {
  const names = Object.keys(outcomes);
  const attempts = options.attempts ?? Math.max(...names.map((n) => outcomes[n].length));
  const job: JobConfig = {
    schema: JOB_SCHEMA,
    createdAt: new Date().toISOString(),
    versions: { tbrl: '0.1.0', node: process.version, promptVersion: 'fixture' },
    run: { policy: options.model ? 'model' : 'oracle', ...(options.model ? { model: options.model, baseUrl: 'http://127.0.0.1:9/v1' } : {}), trace: true, checkpoint: false, attempts, timeoutMultiplier: 1 },
    tasks: names.map((name) => ({ name, dir: `/tasks/${name}`, id: name, format: 'terminal-bench', contentHash: 'sha256:fixture', image: 'debian:bookworm-slim', agentTimeoutSec: 60, testTimeoutSec: 60 })),
  };
  writeJsonAtomic(join(jobDir, 'job.json'), job);
  const records: TrialRecord[] = [];
  for (const task of names) {
    outcomes[task].forEach((cls, i) => {
      const trial = trialName(task, i + 1);
      const dir = trialDir(jobDir, trial);
      mkdirSync(dir, { recursive: true });
      copyFileSync(FIXTURE_TRAJECTORY, join(dir, 'trajectory.jsonl'));
      const record: TrialRecord = {
        schema: TRIAL_SCHEMA, trial, task, attempt: i + 1,
        outcome: { class: cls, ...(cls === 'passed' ? {} : { cause: `fixture ${cls}` }) },
        ...(cls === 'passed' ? { reward: 1 } : cls === 'failed' ? { reward: 0 } : {}),
        tokens: { prompt: 100, completion: 20 }, wallSec: 1.5, startedAt: job.createdAt, endedAt: job.createdAt, trajectory: 'trajectory.jsonl', retries: 0,
      };
      writeJsonAtomic(join(dir, 'trial.json'), record);
      records.push(record);
    });
  }
  writeJsonAtomic(join(jobDir, 'results.json'), computeResults(job, records, 3));
  if (options.mtime) utimesSync(join(jobDir, 'job.json'), options.mtime, options.mtime);
  return job;
}
