import { basename } from 'node:path';
import { computeResults, readJobConfig, readTrials, type JobConfig, type JobResults, type TrialRecord } from './job';
import { pairedBootstrap, type BootstrapInterval } from './stats';

export interface LoadedJob {
  dir: string;
  label: string;
  job: JobConfig;
  trials: Map<string, TrialRecord>;
  results: JobResults;
}

export function loadJob(dir: string): LoadedJob {
  const job = readJobConfig(dir);
  const trials = readTrials(dir);
  return { dir, label: jobLabel(dir, job), job, trials, results: computeResults(job, trials.values(), 0) };
}

function jobLabel(dir: string, job: JobConfig): string {
  const who = job.run.policy === 'oracle' || !job.run.model ? 'oracle' : job.run.model;
  return `${basename(dir)} (${who})`;
}

export interface Comparison {
  jobs: Array<{ dir: string; label: string; passRate: number | null; scored: number; masked: number }>;
  /** Task rows; rate is passed / scored trials, null when the job has no scored trial of it. */
  tasks: Array<{ task: string; rates: Array<number | null>; trials: Array<string[]> }>;
  /** Each job against the first, over the tasks both scored. */
  differences: Array<{ job: string; against: string; tasks: number; interval: BootstrapInterval }>;
  /** Tasks whose majority outcome (rate ≥ 0.5) changed between the first job and another. */
  flipped: Array<{ task: string; job: string; from: number; to: number }>;
}

export function compareJobs(jobs: LoadedJob[], options: { seed?: number; resamples?: number } = {}): Comparison {
  const names = [...new Set(jobs.flatMap((j) => j.job.tasks.map((t) => t.name)))].sort();
  const rateOf = (j: LoadedJob, task: string): number | null => {
    const r = j.results.tasks.find((t) => t.task === task);
    return r && r.scored > 0 ? r.passed / r.scored : null;
  };
  const tasks = names.map((task) => ({
    task,
    rates: jobs.map((j) => rateOf(j, task)),
    trials: jobs.map((j) => [...j.trials.values()].filter((t) => t.task === task).sort((a, b) => a.attempt - b.attempt).map((t) => t.trial)),
  }));
  const differences: Comparison['differences'] = [];
  const flipped: Comparison['flipped'] = [];
  for (let i = 1; i < jobs.length; i++) {
    const both = tasks.filter((t) => t.rates[0] !== null && t.rates[i] !== null);
    differences.push({
      job: jobs[i].label,
      against: jobs[0].label,
      tasks: both.length,
      interval: pairedBootstrap(both.map((t) => t.rates[0] as number), both.map((t) => t.rates[i] as number), options),
    });
    for (const t of both) {
      const a = t.rates[0] as number;
      const b = t.rates[i] as number;
      if ((a >= 0.5) !== (b >= 0.5)) flipped.push({ task: t.task, job: jobs[i].label, from: a, to: b });
    }
  }
  return {
    jobs: jobs.map((j) => ({ dir: j.dir, label: j.label, passRate: j.results.overall.scored ? j.results.overall.passed / j.results.overall.scored : null, scored: j.results.overall.scored, masked: j.results.overall.masked })),
    tasks,
    differences,
    flipped,
  };
}
