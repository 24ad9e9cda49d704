import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { RUN_POLICY_OPTIONS, RUN_POLICY_USAGE, parseRunPolicyOptions, positiveNumber } from '../run-options';
import { runEvalJob, DEFAULT_RETRY_CLASSES, type EvalEvent } from '../../core/eval/run-job';
import { loadJob } from '../../core/eval/compare';
import { formatResults } from '../../core/eval/format';
import { computeResults, type JobRunConfig } from '../../core/eval/job';
import { OUTCOME_CLASSES, isOutcomeClass, type OutcomeClass } from '../../core/run/outcome';
import { resolve } from 'node:path';

function list(values: Record<string, unknown>, key: string): string[] {
  const raw = values[key];
  const items = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return items.flatMap((x) => String(x).split(',')).map((s) => s.trim()).filter(Boolean);
}

function classes(values: Record<string, unknown>, key: string): OutcomeClass[] {
  const out = list(values, key);
  for (const c of out) if (!isOutcomeClass(c)) throw new UsageError(`--${key}: "${c}" is not an outcome class (one of ${OUTCOME_CLASSES.join(', ')})`);
  return out as OutcomeClass[];
}

/** Only the run settings given on the command line: on --resume these are checked against the job. */
function runConfigFromFlags(values: Record<string, unknown>): Partial<JobRunConfig> {
  const p = parseRunPolicyOptions(values);
  const price = values.price as string | undefined;
  let pricePerMTok: JobRunConfig['pricePerMTok'];
  if (price !== undefined) {
    const [a, b] = price.split(',').map(Number);
    if (!Number.isFinite(a) || !Number.isFinite(b) || a < 0 || b < 0) throw new UsageError(`--price takes USD per million prompt and completion tokens, e.g. --price 0.15,0.60 (not "${price}")`);
    pricePerMTok = { prompt: a, completion: b };
  }
  return {
    policy: p.policy,
    baseUrl: p.baseUrl,
    model: p.model,
    n: p.n,
    verifier: p.verifier,
    judgeModel: p.judgeModel,
    maxSteps: p.maxSteps,
    maxTimeSec: p.maxTimeSec,
    maxTokens: p.maxTokens,
    ...(values['no-trace'] !== undefined ? { trace: false } : {}),
    ...(values.checkpoint !== undefined ? { checkpoint: true } : {}),
    attempts: positiveNumber(values, 'attempts', true),
    timeoutMultiplier: positiveNumber(values, 'timeout-multiplier', false),
    trialTimeoutSec: positiveNumber(values, 'trial-timeout', false),
    pricePerMTok,
  };
}

function duration(sec: number): string {
  if (sec < 60) return `${Math.round(sec)}s`;
  return `${Math.floor(sec / 60)}m${String(Math.round(sec % 60)).padStart(2, '0')}s`;
}

function progressPrinter(json: boolean): (e: EvalEvent) => void {
  const tty = process.stderr.isTTY;
  return (e) => {
    if (json) {
      // Results in job-end are already in results.json; the event keeps the overall figures.
      const line = e.type === 'job-end' ? { ...e, results: { overall: e.results.overall, complete: e.results.complete } } : e;
      process.stdout.write(JSON.stringify(line) + '\n');
      return;
    }
    switch (e.type) {
      case 'job-start':
        console.error(`tbrl eval: ${e.resumed ? 'resuming' : 'job'} ${e.jobDir}: ${e.tasks} task(s) × ${e.trials / Math.max(1, e.tasks)} attempt(s) = ${e.trials} trials; ${e.toRun} to run${e.alreadyDone ? `, ${e.alreadyDone} already done` : ''}${e.retrying ? `, ${e.retrying} to retry` : ''}`);
        break;
      case 'trial-end':
        if (!tty) console.error(`  ${e.trial}: ${e.record.outcome.class}${e.record.reward !== undefined ? ` (reward ${e.record.reward.toFixed(3)})` : ''}${e.record.outcome.cause && e.record.outcome.class !== 'failed' ? ` — ${e.record.outcome.cause}` : ''}${e.willRetry ? ' → retrying' : ''} [${e.record.wallSec.toFixed(1)} s]`);
        break;
      case 'progress': {
        const counts = OUTCOME_CLASSES.filter((c) => e.outcomes[c]).map((c) => `${c} ${e.outcomes[c]}`).join(' · ');
        const line = `[${e.done}/${e.total}] ${counts || 'no trial done yet'} | ${e.running} running | ${e.trialsPerMin.toFixed(1)} trials/min | ETA ${e.etaSec === null ? '?' : duration(e.etaSec)}`;
        if (tty) process.stderr.write(`\r\x1b[2K${line}`);
        else console.error(line);
        break;
      }
      case 'job-end':
        if (tty) process.stderr.write('\n');
        break;
      case 'trial-start':
        break;
    }
  };
}

export const evalCommand: CliCommand = {
  name: 'eval',
  summary: 'Evaluate over many tasks: K attempts each, N at a time; pass@k, resume, a job directory',
  usage: [
    'eval <task-dir|dataset-dir|glob|list-file>... [--attempts K] [--concurrency N] [--include GLOB] [--exclude GLOB]',
    '     [--n-tasks N] [--job-dir DIR] [--timeout-multiplier X] [--trial-timeout SEC] [--price IN,OUT]',
    `     ${RUN_POLICY_USAGE.join('\n     ')}`,
    '     [--retry-include CLASSES] [--retry-exclude CLASSES] [--max-retries N] [--export atif] [--layout harbor]',
    '     [--ray http://head:8265] [--json]',
    'eval --resume JOB [--concurrency N] [--retry-include ...] [--max-retries N]',
    'eval --summary JOB [--json]',
    '',
    'Each trial is a full `tbrl run` (same orchestrator) in JOB/trials/<task>__<k>/. JOB/results.json holds',
    'per-task and overall mean reward, pass@1 and unbiased pass@k for k ≤ K, tokens, cost, time and every',
    'trial\'s outcome class; infra classes (model/verifier/environment error, context overflow) are left out',
    `of the rates and re-run (default retry classes: ${DEFAULT_RETRY_CLASSES.join(', ')}; --max-retries 1 per invocation).`,
    '--resume runs only the missing trials and the retry classes; the job remembers its own options.',
    '--ray runs the trials as Ray tasks on the cluster\'s nodes that have the `docker` resource.',
  ].join('\n'),
  options: {
    ...RUN_POLICY_OPTIONS,
    attempts: { type: 'string' },
    concurrency: { type: 'string' },
    include: { type: 'string', multiple: true },
    exclude: { type: 'string', multiple: true },
    'n-tasks': { type: 'string' },
    'job-dir': { type: 'string' },
    resume: { type: 'string' },
    summary: { type: 'string' },
    json: { type: 'boolean' },
    'retry-include': { type: 'string', multiple: true },
    'retry-exclude': { type: 'string', multiple: true },
    'max-retries': { type: 'string' },
    'timeout-multiplier': { type: 'string' },
    'trial-timeout': { type: 'string' },
    price: { type: 'string' },
    export: { type: 'string' },
    layout: { type: 'string' },
    ray: { type: 'string' },
    'ray-token': { type: 'string' },
  },
  async run({ positionals, values }) {
    const json = values.json === true;
    if (values.summary !== undefined) {
      const loaded = loadJob(resolve(values.summary as string));
      const results = computeResults(loaded.job, loaded.trials.values(), loaded.results.overall.elapsedSec);
      if (json) console.log(JSON.stringify(results, null, 2));
      else console.log(formatResults(results, loaded.dir));
      return 0;
    }
    const resume = values.resume as string | undefined;
    if (!resume && positionals.length === 0) throw new UsageError('missing tasks (e.g. tbrl eval examples/ --attempts 3 --concurrency 4)');
    if (values.export !== undefined && values.export !== 'atif') throw new UsageError(`--export takes atif, not "${String(values.export)}"`);
    if (values.layout !== undefined && values.layout !== 'harbor' && values.layout !== 'tbrl') throw new UsageError(`--layout takes harbor or tbrl, not "${String(values.layout)}"`);
    const run = runConfigFromFlags(values);
    const include = classes(values, 'retry-include');
    const exclude = new Set(classes(values, 'retry-exclude'));
    const retryClasses = (include.length ? include : DEFAULT_RETRY_CLASSES).filter((c) => !exclude.has(c));
    const maxRetriesRaw = values['max-retries'];
    const maxRetries = maxRetriesRaw === undefined ? 1 : Number(maxRetriesRaw);
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new UsageError(`--max-retries must be a whole number from 0, not "${String(maxRetriesRaw)}"`);
    const concurrency = positiveNumber(values, 'concurrency', true) ?? 4;
    const nTasks = positiveNumber(values, 'n-tasks', true);

    const controller = new AbortController();
    let interrupts = 0;
    const onSigint = (): void => {
      interrupts++;
      if (interrupts === 1) {
        console.error('\ntbrl eval: interrupting: stopping the running trials (Ctrl-C again to quit at once; completed trials are on disk, `tbrl eval --resume` runs the rest)');
        controller.abort('interrupted');
      } else process.exit(130);
    };
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigint);
    try {
      const apiKey = values['api-key'] as string | undefined;
      const { results, interrupted, jobDir } = await runEvalJob({
        inputs: positionals,
        sources: { include: list(values, 'include'), exclude: list(values, 'exclude'), nTasks },
        jobDir: values['job-dir'] as string | undefined,
        resume,
        run,
        concurrency,
        retry: { classes: retryClasses, maxRetries },
        outputs: { exportAtif: values.export === 'atif' || undefined, harborLayout: values.layout === 'harbor' || undefined },
        trialOptions: apiKey ? { apiKey } : {},
        rayCluster: values.ray !== undefined ? { url: values.ray as string, token: (values['ray-token'] as string | undefined) ?? process.env.RAY_JOB_TOKEN, concurrency, onInfo: (m) => { if (!json) console.error(`tbrl eval: ${m}`); } } : undefined,
        signal: controller.signal,
        onEvent: progressPrinter(json),
      });
      if (!json) console.log(`\n${formatResults(results, jobDir)}`);
      return interrupted ? 130 : 0;
    } finally {
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigint);
    }
  },
};
