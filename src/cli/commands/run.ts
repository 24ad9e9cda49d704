import { allowListFrom } from '../../core/tasks/confine';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { forkRun, runTask, safeName, timestamp, type RunProgress, type RunTaskResult } from '../../core/run/run-task';
import { actionSummary, PARSE_ERROR } from '../../core/trajectory/replay';
import { outcomeLine } from '../../core/run/report';
import type { StepRecord } from '../../core/trajectory/schema';
import { TbrlError } from '../../core/errors';
import { outcomeOf } from '../../core/run/outcome';
import { runAttempts, type AttemptsOutcome } from '../../core/verifier/attempts';
import { VERIFIER_MODES } from '../../core/verifier/types';
import { judgeFailureLine } from '../../core/reward';
import { basename, join, resolve } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseRunPolicyOptions, positiveNumber, RUN_POLICY_OPTIONS } from '../run-options';
import { formatUsd } from '../../core/model/pricing';

function stepLine(s: StepRecord): string {
  const parts = s.actions.filter((a) => a.kind !== PARSE_ERROR).map((a) => actionSummary(a));
  if (s.parseErrors.length) parts.push(`${s.parseErrors.length} parse error(s)`);
  if (parts.length === 0) parts.push('no action');
  const tokens = s.usage.promptTokens || s.usage.completionTokens ? `, ${s.usage.promptTokens}+${s.usage.completionTokens} tok` : '';
  return `  step ${s.index} (${(s.durationMs / 1000).toFixed(1)} s${tokens}): ${parts.join('; ')}`;
}

function printProgress(e: RunProgress): void {
  switch (e.type) {
    case 'info':
      console.error(`tbrl: ${e.message}`);
      break;
    case 'phase':
      console.error(`• ${e.message}`);
      break;
    case 'build':
      console.error(`  | ${e.line.trimEnd()}`);
      break;
    case 'step':
      console.error(stepLine(e.step));
      break;
    case 'warning':
      console.error(`  ! ${e.message.split('\n')[0]}`);
      break;
    case 'step-start':
      break;
  }
}

function printSummary(r: RunTaskResult): void {
  const f = r.footer;
  const secs = (Date.parse(f.endedAt) - Date.parse(r.header.startedAt)) / 1000;
  const reward = f.reward;
  console.log('');
  console.log(`Task:       ${r.header.task.id}`);
  console.log(`Policy:     ${r.policyDescription}`);
  console.log(`Steps:      ${f.steps} (ended: ${f.endReason}${f.endMessage ? ` — ${f.endMessage.split('\n')[0]}` : ''})`);
  if (reward) {
    const tests = reward.tests !== undefined ? `tests ${reward.tests.toFixed(3)}` : `tests not scored (${reward.testError?.kind})`;
    const failed = judgeFailureLine(reward);
    const judge = reward.judge && 'score' in reward.judge ? `, judge ${reward.judge.score.toFixed(3)}` : failed ? `; ${failed}` : '';
    console.log(`Reward:     ${reward.total.toFixed(3)} (${tests}${judge})`);
  } else {
    console.log('Reward:     not computed');
  }
  console.log(`Outcome:    ${outcomeLine(f)}`);
  console.log(`Time:       ${secs.toFixed(1)} s`);
  console.log(`Tokens:     ${f.usage.promptTokens} prompt + ${f.usage.completionTokens} completion`);
  const priced = r.steps.filter((s) => s.costUsd !== undefined);
  if (r.header.policy.kind === 'model') console.log(`Cost:       ${priced.length ? formatUsd(priced.reduce((a, s) => a + s.costUsd!, 0)) : 'unknown (no price for this model: add it to .tbrl/prices.json)'}`);
  if (f.depgpo) console.log(`DepGPO:     factors ${f.depgpo.factors.map((x) => x.toFixed(2)).join(' ')}${f.depgpo.fallback ? ` (fallback: ${f.depgpo.fallback})` : ''}`);
  console.log(`Trajectory: ${r.trajectoryPath}`);
  console.log(`Report:     ${r.reportPath}`);
}

export const runCommand: CliCommand = {
  name: 'run',
  summary: 'Run an agent on a task in a container; writes a trajectory, a reward and a report',
  usage: [
    'run <task-dir> [--base-url URL] [--model NAME] [--api-key KEY] [--n N] [--policy model|oracle]',
    `                [--verifier ${VERIFIER_MODES.join('|')}] [--max-steps N] [--max-time SEC]`,
    '                [--max-tokens N] [--judge MODEL] [--out DIR] [--checkpoint] [--no-trace]',
    '                [--attempts T --select best|refine]',
    'run --fork-from <trajectory.jsonl> --step K [same policy options]',
    '',
    'Without an endpoint (--base-url, OPENAI_BASE_URL or .tbrl/config.json) the oracle policy runs the',
    "task's reference solution. The model name comes from --model, TBRL_MODEL or the config file.",
    '--n N > 1 without --verifier uses the listwise verifier to choose (one extra model call per step);',
    '--verifier none with --n > 1 is refused (only the first candidate would run).',
    'With --judge (or TBRL_JUDGE_MODEL) an LLM judge on the same endpoint adds its score: 0.65 × tests + 0.35 × judge.',
    'Output: runs/<task>-<time>/trajectory.jsonl and report.md (or --out DIR).',
    'With --attempts T: T runs in <out>/attempt-<k>/; --select best keeps the highest reward (a trajectory',
    'verifier on the same endpoint breaks ties), --select refine shows each attempt a summary of the last',
    'and stops at reward 1. The choice is written to <out>/attempts.json.',
    'With --fork-from and --step: a new run of the same task starting from step K\'s checkpoint of that run',
    '(made with --checkpoint): steps 0..K are copied, the policy goes on from step K+1.',
  ].join('\n'),
  options: {
    ...RUN_POLICY_OPTIONS,
    out: { type: 'string' },
    attempts: { type: 'string' },
    select: { type: 'string' },
    'fork-from': { type: 'string' },
    step: { type: 'string' },
    'allow-privilege': { type: 'string', multiple: true },
  },
  async run({ positionals, values }) {
    const forkFrom = values['fork-from'] as string | undefined;
    const forkStep = parseForkStep(forkFrom, values.step);
    if (forkFrom !== undefined && positionals.length > 1) throw new UsageError(`--fork-from takes the task from the trajectory; expected at most one task directory, got ${positionals.length}`);
    if (forkFrom !== undefined && values.attempts !== undefined) throw new UsageError('--fork-from makes one run; drop --attempts');
    if (forkFrom === undefined && positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'missing <task-dir> (e.g. tbrl run examples/hello-world)' : `expected one task directory, got ${positionals.length}: ${positionals.join(' ')}`);

    const controller = new AbortController();
    let interrupts = 0;
    const onSigint = (): void => {
      interrupts++;
      if (interrupts === 1) {
        console.error('\ntbrl: interrupting: stopping the agent and removing the container (Ctrl-C again to quit at once; completed steps are already on disk)');
        controller.abort('interrupted');
      } else {
        process.exit(130);
      }
    };
    process.on('SIGINT', onSigint);
    const baseOptions = {
      taskDir: positionals[0] as string,
      ...parseRunPolicyOptions(values),
      allowPrivileges: allowListFrom(values['allow-privilege']),
      signal: controller.signal,
      onProgress: printProgress,
    };
    const attempts = positiveNumber(values, 'attempts', true) ?? 1;
    const select = (values.select as string | undefined) ?? 'best';
    if (select !== 'best' && select !== 'refine') throw new UsageError(`--select must be best or refine, not "${select}"`);
    if (values.select !== undefined && attempts < 2) throw new UsageError('--select needs --attempts 2 or more (e.g. --attempts 3 --select refine)');
    try {
      if (attempts > 1) return await runSeveral(baseOptions, attempts, select, values.out as string | undefined, controller.signal);
      const { result, error } = forkFrom !== undefined
        ? await forkRun({ ...baseOptions, taskDir: positionals[0], trajectoryPath: forkFrom, step: forkStep!, outDir: values.out as string | undefined })
        : await runTask({ ...baseOptions, outDir: values.out as string | undefined });
      if (error) {
        console.error(`tbrl run: ${error.message}`);
        printSummary(result);
        return controller.signal.aborted ? 130 : 1;
      }
      printSummary(result);
      if (result.footer.endReason === 'interrupted') return 130;
      // A run cut short by the model (it hung until the time limit, or failed) is not a success.
      return outcomeOf(result.footer).class === 'model_error' || /while the policy was answering/.test(result.footer.endMessage ?? '') ? 1 : 0;
    } finally {
      process.off('SIGINT', onSigint);
    }
  },
};

type RunOptions = Omit<Parameters<typeof runTask>[0], 'outDir' | 'previousAttempt'>;

/** Best-of-T / Sequential Refine: each attempt is a full run in its own directory. */
async function runSeveral(options: RunOptions, attempts: number, select: 'best' | 'refine', out: string | undefined, signal: AbortSignal): Promise<number> {
  const root = resolve(out ?? join('runs', `${safeName(basename(resolve(options.taskDir)))}-${timestamp()}-x${attempts}`));
  const verifierEndpoint = options.baseUrl ?? process.env.OPENAI_BASE_URL;
  const outcome: AttemptsOutcome = await runAttempts(
    async (attempt, previousSummary) => {
      if (signal.aborted) throw new TbrlError('run-interrupted', 'Interrupted before this attempt started.');
      console.error(`\n• Attempt ${attempt}/${attempts}${previousSummary ? ' (with a summary of the previous attempt)' : ''}`);
      const { result, error } = await runTask({ ...options, outDir: join(root, `attempt-${attempt}`), previousAttempt: previousSummary });
      // A failed attempt is recorded as failed (runAttempts), its summary left out as before.
      if (error) throw error;
      printSummary(result);
      return { trajectoryPath: result.trajectoryPath, reward: result.footer.reward?.total };
    },
    {
      attempts,
      select,
      // Ties between equally rewarded attempts go to a trajectory verifier on the generator's endpoint.
      verifier: verifierEndpoint && (options.model ?? process.env.TBRL_MODEL)
        ? { baseUrl: verifierEndpoint, model: process.env.TBRL_VERIFIER_MODEL ?? options.model ?? process.env.TBRL_MODEL ?? '', apiKey: options.apiKey ?? process.env.OPENAI_API_KEY }
        : undefined,
      log: (line) => console.error(`  ${line}`),
    },
  );
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'attempts.json'), JSON.stringify({ select, ...outcome }, null, 2) + '\n');
  const chosen = outcome.attempts[outcome.selected];
  console.log('');
  console.log(`Attempts:   ${outcome.attempts.map((a) => `${a.attempt}:${a.error ? 'failed' : (a.reward ?? 'n/a')}`).join('  ')}`);
  console.log(`Selected:   attempt ${chosen.attempt} (${outcome.reason})`);
  console.log(`Trajectory: ${chosen.trajectoryPath || '(none: every attempt failed)'}`);
  console.log(`Summary:    ${join(root, 'attempts.json')}`);
  if (signal.aborted) return 130;
  return chosen.error ? 1 : 0;
}

function parseForkStep(forkFrom: string | undefined, raw: unknown): number | undefined {
  if (forkFrom === undefined) {
    if (raw !== undefined) throw new UsageError('--step needs --fork-from <trajectory.jsonl> (e.g. tbrl run --fork-from runs/x/trajectory.jsonl --step 2)');
    return undefined;
  }
  const n = Number(raw);
  if (raw === undefined || !Number.isInteger(n) || n < 0) {
    throw new UsageError(`--fork-from needs --step K, the step to branch from (a whole number from 0), not ${raw === undefined ? 'nothing' : `"${String(raw)}"`} (e.g. --fork-from ${forkFrom} --step 2)`);
  }
  return n;
}
