import { TbrlError } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { VerifierTrace } from '../trace/types';
import type { RewardRecord, StepRecord, TamperFlag, TrajectoryLine } from '../trajectory/schema';
import { tamperFlags } from './tampering';
import { Judge, type JudgeOptions, type JudgeResult } from './judge/index';
import { runTests, TASK_ERROR_KINDS, type RunTestsOptions, type TestRunResult, type TestErrorKind } from './tests';

export { runTests, TASK_ERROR_KINDS } from './tests';
export type { TestRunResult, TestErrorKind } from './tests';
export { Judge, JudgeBackendSwitch, JUDGE_PROMPT_VERSION, loadJudgePrompt } from './judge/index';
export type { JudgeOptions, JudgeResult, JudgeBackendConfig } from './judge/index';
export { resolveJudgeSwitch, DEFAULT_JUDGE_CONTROL_FILE } from './judge/config';

export interface RewardWeights { tests: number; judge: number }

export const DEFAULT_REWARD_WEIGHTS: RewardWeights = { tests: 0.65, judge: 0.35 };

export interface ComputeRewardOptions {
  task: Task;
  /** The container in the state the agent left it. */
  sandbox: Sandbox;
  /** Header + steps (+ footer) of the run, as objects or JSONL lines. */
  trajectoryLines: TrajectoryLine[] | string[] | string;
  /** No judge: the reward is tests only (weights renormalised, and the record says so). */
  judge?: Judge | JudgeOptions;
  weights?: Partial<RewardWeights>;
  tests?: Omit<RunTestsOptions, 'task' | 'sandbox'>;
  signal?: AbortSignal;
}

export interface ComputedReward {
  reward: RewardRecord;
  /** The traced test run: DepGPO's resource set E (the run loop writes it to the footer). */
  verifierTrace?: VerifierTrace;
  testRun: TestRunResult;
  judge?: JudgeResult;
}

export function validateRewardWeights(w: Partial<RewardWeights> | undefined): RewardWeights {
  const weights = { ...DEFAULT_REWARD_WEIGHTS, ...w };
  for (const [k, v] of Object.entries(weights)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new TbrlError('reward.bad-weights', `reward weight "${k}" must be a non-negative number, got ${JSON.stringify(v)}`, 'use e.g. {"tests": 0.65, "judge": 0.35}');
    }
  }
  if (weights.tests + weights.judge <= 0) throw new TbrlError('reward.bad-weights', 'reward weights sum to 0', 'use e.g. {"tests": 0.65, "judge": 0.35}');
  return weights;
}

/** Whether the reward reflects the agent (false: the task or harness broke; drop it from training). */
export function rewardIsUsable(reward: RewardRecord): boolean {
  return !reward.testError || !TASK_ERROR_KINDS.includes(reward.testError.kind as TestErrorKind);
}

const round = (x: number) => Math.round(x * 1e12) / 1e12;

/**
 * The reward record from a test run and a judge result (undefined: no judge configured).
 * Pure, so the weighting rules are testable without a container.
 */
export function combineReward(
  testRun: Pick<TestRunResult, 'tests' | 'outcomes' | 'error' | 'metrics' | 'metricsRule'>,
  judged: JudgeResult | { missing: string } | undefined,
  configuredWeights: Partial<RewardWeights> = DEFAULT_REWARD_WEIGHTS,
): RewardRecord {
  const configured = validateRewardWeights(configuredWeights);
  const reward: RewardRecord = { weights: configured, total: 0 };
  if (testRun.error) reward.testError = testRun.error;
  else {
    reward.tests = testRun.tests;
    reward.testOutcomes = testRun.outcomes;
    if (testRun.metrics) {
      reward.metrics = testRun.metrics;
      reward.metricsRule = testRun.metricsRule;
    }
  }

  let judgeScore: number | undefined;
  if (!judged || configured.judge === 0) {
    reward.judge = { missing: configured.judge === 0 ? 'judge weight is 0' : 'no judge configured' };
  } else if ('ok' in judged && judged.ok) {
    judgeScore = judged.score;
    reward.judge = { score: judged.score, components: judged.components, promptVersion: judged.promptVersion, backend: judged.backend };
  } else {
    reward.judge = { missing: judged.missing };
  }

  // Renormalise when the judge has nothing to say: the tests carry the whole reward.
  const sum = configured.tests + configured.judge;
  const weights = judgeScore === undefined ? { tests: 1, judge: 0 } : { tests: configured.tests / sum, judge: configured.judge / sum };
  reward.weights = weights;
  reward.total = round(weights.tests * (reward.tests ?? 0) + weights.judge * (judgeScore ?? 0));
  return reward;
}

const NOT_ASKED = new Set(['no judge configured', 'judge weight is 0']);

/**
 * One line for a summary when a configured judge gave no score, e.g. "judge: failed after 2
 * attempts (HTTP 500) — reward is tests only"; undefined when it scored or was not asked.
 */
export function judgeFailureLine(reward: Pick<RewardRecord, 'judge'>): string | undefined {
  const j = reward.judge;
  if (!j || !('missing' in j) || NOT_ASKED.has(j.missing)) return undefined;
  const attempts = /after (\d+) attempt/.exec(j.missing)?.[1];
  const http = /HTTP (\d{3})/.exec(j.missing)?.[1];
  const last = j.missing.replace(/^.*?; last: /, '').replace(/^backend error: /, '');
  const reason = http ? `HTTP ${http}` : last.length > 80 ? `${last.slice(0, 79)}…` : last;
  return `judge: failed${attempts ? ` after ${attempts} attempt${attempts === '1' ? '' : 's'}` : ''} (${reason}) — reward is tests only`;
}

/**
 * Combined reward: weights.tests · weighted tests + weights.judge · judge (0.65/0.35 by default).
 * Without a judge, or when the judge's score is missing, the judge's share moves to the tests and
 * the record's `weights` and `judge.missing` say so. A test run that failed (timeout, crash, no
 * summary) earns 0 for its share, but `tests` stays undefined and `testError` names the cause with
 * the log tail, so no zero is ever silent.
 */
export async function computeReward(options: ComputeRewardOptions): Promise<ComputedReward> {
  const configured = validateRewardWeights(options.weights);
  const judge = options.judge === undefined ? undefined : options.judge instanceof Judge ? options.judge : new Judge(options.judge);
  const [testRun, judged] = await Promise.all([
    runTests({ task: options.task, sandbox: options.sandbox, ...options.tests }),
    judge && configured.judge > 0 ? judge.score(options.trajectoryLines, options.signal) : Promise.resolve(undefined),
  ]);
  if (judge && !(options.judge instanceof Judge)) judge.close();

  const reward = combineReward(testRun, judge && configured.judge > 0 ? judged ?? { missing: 'judge did not run' } : undefined, configured);
  const steps = stepsOf(options.trajectoryLines);
  const tampering = [
    ...(testRun.discardedBeforeVerification ?? []).map((path): TamperFlag => ({ kind: 'reward-file', path, detail: `${path} existed before the verifier ran; it was deleted unread` })),
    ...tamperFlags(steps, { testDir: options.tests?.testDir }),
  ];
  if (tampering.length) reward.tampering = tampering;
  return { reward, verifierTrace: testRun.verifierTrace, testRun, judge: judged };
}

/** The step records of a trajectory given as records, JSONL lines or JSONL text; lines that do not parse are skipped. */
function stepsOf(lines: TrajectoryLine[] | string[] | string): StepRecord[] {
  const records = (typeof lines === 'string' ? lines.split('\n') : lines).map((l) => {
    if (typeof l !== 'string') return l;
    try {
      return JSON.parse(l) as TrajectoryLine;
    } catch {
      return undefined;
    }
  });
  return records.filter((r): r is StepRecord => (r as { type?: string } | undefined)?.type === 'step');
}
