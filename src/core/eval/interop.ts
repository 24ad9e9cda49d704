import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { readTrajectory } from '../trajectory/reader';
import { toAtif } from '../trajectory/export';
import type { JobConfig, JobResults, TrialRecord } from './job';
import { trialDir, writeJsonAtomic } from './job';

export interface ExportOptions {
  /** Write each trial's ATIF trajectory as trajectory.atif.json next to its trajectory.jsonl. */
  exportAtif?: boolean;
  /** Also write a Harbor-style job directory inside the job (harbor/). */
  harborLayout?: boolean;
}

export const HARBOR_DIR = 'harbor';

export async function writeTrialExports(dir: string, options: ExportOptions): Promise<void> {
  if (!options.exportAtif && !options.harborLayout) return;
  const path = join(dir, 'trajectory.jsonl');
  if (!existsSync(path)) return;
  const atif = toAtif(await readTrajectory(path));
  writeJsonAtomic(join(dir, 'trajectory.atif.json'), atif);
}

/**
 * Harbor's job layout (harbor 0.25, `harbor run` → jobs/<name>/): result.json with the job's stats,
 * and one directory per trial with result.json (verifier_result.rewards.reward, exception_info),
 * verifier/reward.txt and agent/trajectory.json (ATIF). Written under JOB/harbor/ so Harbor's own
 * tooling (`harbor view`, scripts that read result.json) reads our runs.
 */
export function writeHarborJob(jobDir: string, job: JobConfig, results: JobResults, trials: Map<string, TrialRecord>): void {
  const root = join(jobDir, HARBOR_DIR);
  const agent = job.run.policy === 'oracle' || !job.run.model ? 'oracle' : 'tbrl';
  const model = job.run.model ?? null;
  const evalKey = `${agent}__${model ?? 'oracle'}__tbrl-eval`;
  const rewardStats: Record<string, string[]> = {};
  const exceptionStats: Record<string, string[]> = {};
  const byName = new Map(job.tasks.map((t) => [t.name, t]));
  for (const rec of trials.values()) {
    const task = byName.get(rec.task);
    const dir = join(root, rec.trial);
    mkdirSync(join(dir, 'verifier'), { recursive: true });
    mkdirSync(join(dir, 'agent'), { recursive: true });
    const masked = rec.outcome.class !== 'passed' && rec.outcome.class !== 'failed' && rec.outcome.class !== 'agent_timeout';
    const exception = masked || rec.outcome.class === 'agent_timeout'
      ? { exception_type: harborException(rec.outcome.class), exception_message: rec.outcome.cause ?? rec.outcome.class, exception_traceback: '', occurred_at: rec.endedAt }
      : null;
    if (rec.reward !== undefined) {
      writeFileSync(join(dir, 'verifier', 'reward.txt'), `${rec.reward}\n`);
      (rewardStats[String(rec.reward)] ??= []).push(rec.trial);
    }
    if (exception) (exceptionStats[exception.exception_type] ??= []).push(rec.trial);
    const trajectory = join(trialDir(jobDir, rec.trial), 'trajectory.atif.json');
    if (existsSync(trajectory) && !existsSync(join(dir, 'agent', 'trajectory.json'))) writeFileSync(join(dir, 'agent', 'trajectory.json'), readFileSync(trajectory, 'utf8'));
    writeJsonAtomic(join(dir, 'result.json'), {
      id: uuidOf(`${job.createdAt}/${rec.trial}/${rec.retries}`),
      task_name: rec.task,
      trial_name: rec.trial,
      trial_uri: `file://${dir}`,
      task_id: { path: task?.dir ?? '' },
      source: 'tbrl-eval',
      task_checksum: task?.contentHash ?? '',
      config: { task: { path: task?.dir ?? '' }, trial_name: rec.trial, timeout_multiplier: job.run.timeoutMultiplier, agent: { name: agent, model_name: model } },
      agent_info: { name: agent, version: job.versions.tbrl, model_info: model ? { name: model, provider: 'openai' } : null },
      agent_result: { n_input_tokens: rec.tokens.prompt, n_output_tokens: rec.tokens.completion, cost_usd: rec.costUsd ?? null, metadata: { tbrl_outcome: rec.outcome } },
      verifier_result: rec.reward !== undefined ? { rewards: { reward: rec.reward } } : null,
      exception_info: exception,
      started_at: rec.startedAt,
      finished_at: rec.endedAt,
    });
  }
  const o = results.overall;
  writeJsonAtomic(join(root, 'result.json'), {
    id: uuidOf(job.createdAt),
    started_at: job.createdAt,
    updated_at: results.updatedAt,
    finished_at: results.complete ? results.updatedAt : null,
    n_total_trials: results.expectedTrials,
    stats: {
      n_completed_trials: o.trials,
      n_errored_trials: o.masked,
      n_input_tokens: o.tokens.prompt,
      n_output_tokens: o.tokens.completion,
      cost_usd: o.costUsd,
      evals: {
        [evalKey]: {
          n_trials: o.trials,
          n_errors: o.masked,
          metrics: [{ mean: o.meanReward ?? 0 }],
          pass_at_k: Object.fromEntries(Object.entries(o.passAtK).filter(([, v]) => v !== null)),
          reward_stats: { reward: rewardStats },
          exception_stats: exceptionStats,
        },
      },
    },
  });
}

function harborException(cls: string): string {
  switch (cls) {
    case 'agent_timeout': return 'AgentTimeoutError';
    case 'verifier_error': return 'VerifierRuntimeError';
    case 'model_error': return 'ModelError';
    case 'context_overflow': return 'ContextLengthExceededError';
    default: return 'EnvironmentError';
  }
}

/** Harbor ids are UUIDs: a stable one derived from the name, so rewriting the layout keeps them. */
function uuidOf(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
