import { readFileSync, writeFileSync } from 'node:fs';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { TbrlError, errorMessage } from '../../core/errors';
import type { ClusterOptions } from '../../core/trainer/connection';
import { RayJobsClient, TERMINAL_STATUSES } from '../../core/trainer/jobs';
import type { JobDetails } from '../../core/trainer/jobs';
import { submitTraining } from '../../core/trainer/submit';
import { buildBundle } from '../../core/trainer/bundle';
import { algorithmChoices, algorithmNames, defaultAlgorithm, isAlgorithm } from '../../core/trainer/estimators';
import { MetricsParser } from '../../core/trainer/metrics';
import { getPreset, loadPresets } from '../../core/trainer/presets';
import { secretValuesFromEnv } from '../../core/trainer/secrets';

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/**
 * The token comes from TBRL_RAY_TOKEN or --token-file, never from a flag value: a flag would land
 * in shell history and in `ps` output for every user of the machine.
 */
export const clusterOptions = {
  cluster: { type: 'string' },
  header: { type: 'string', multiple: true },
  'ca-file': { type: 'string' },
  'token-file': { type: 'string' },
} as const;

export function clusterFrom(values: Values, env: NodeJS.ProcessEnv = process.env): ClusterOptions {
  const url = (values.cluster as string | undefined) ?? env.TBRL_RAY_ADDRESS ?? env.RAY_ADDRESS;
  if (!url) throw new UsageError('no cluster: pass --cluster http://head-node:8265 (or set TBRL_RAY_ADDRESS)');
  if (/^ray:\/\//.test(url)) throw new UsageError(`${url} is Ray's client port; the trainer bridge uses the dashboard's Jobs API, e.g. --cluster http://head-node:8265`);
  const headers: Record<string, string> = {};
  for (const h of (values.header as string[] | undefined) ?? []) {
    const i = h.indexOf(':');
    if (i <= 0) throw new UsageError(`--header must be name:value, e.g. --header "CF-Access-Client-Id: abc" (got "${h}")`);
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  let token = env.TBRL_RAY_TOKEN || undefined;
  if (typeof values['token-file'] === 'string') {
    try {
      token = readFileSync(values['token-file'], 'utf8').trim();
    } catch (err) {
      throw new TbrlError('ray-token-file', `Cannot read the token file ${values['token-file']}: ${errorMessage(err)}`, 'Pass a file holding only the token, or export TBRL_RAY_TOKEN.');
    }
  }
  return { url, ...(token ? { token } : {}), ...(Object.keys(headers).length ? { headers } : {}), ...(typeof values['ca-file'] === 'string' ? { ca: values['ca-file'] } : {}) };
}

function list(values: Values, key: string): string[] {
  const v = values[key];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(',')).map((s) => s.trim()).filter(Boolean);
}

function describe(job: JobDetails): string {
  const took = job.start_time && job.end_time ? ` in ${((job.end_time - job.start_time) / 1000).toFixed(1)} s` : '';
  return `${job.submission_id}  ${job.status}${took}${job.message ? `  ${job.message.split('\n')[0].slice(0, 160)}` : ''}`;
}

/** `--tasks tasks/*` expands to several words; only the first would be taken without this check. */
function noStrays(positionals: string[]): void {
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument(s) ${positionals.slice(0, 3).map((p) => `"${p}"`).join(' ')}: give lists with commas or repeat the flag, e.g. --tasks a,b or --tasks a --tasks b (a shell glob: --tasks "$(ls -d tasks/* | paste -sd,)")`);
  }
}

/** `--algorithm` values for usage text; the command itself reports an unreadable algorithms.json. */
const ALGORITHM_FLAG = (() => {
  try {
    return algorithmNames().join('|');
  } catch {
    return 'NAME';
  }
})();

function one(positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected one job id (${usage})`);
  return positionals[0];
}

export const trainSubmitCommand: CliCommand = {
  name: 'train submit',
  summary: 'Bundle tasks + trajectories and start a training job on a Ray cluster (Jobs API); a retry never starts a second run',
  usage: `train submit --cluster URL --preset dryrun|test_8b_2_gpus|... [--tasks dir,...] [--trajectories run-dir,...] [--algorithm ${ALGORITHM_FLAG}] [--override key=value]... [--env NAME=value]... [--tag T] [--follow] [--json]   (token: TBRL_RAY_TOKEN or --token-file)`,
  options: {
    ...clusterOptions,
    preset: { type: 'string' },
    tasks: { type: 'string', multiple: true },
    trajectories: { type: 'string', multiple: true },
    algorithm: { type: 'string' },
    override: { type: 'string', multiple: true },
    env: { type: 'string', multiple: true },
    tag: { type: 'string' },
    python: { type: 'string' },
    follow: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  async run({ positionals, values }) {
    noStrays(positionals);
    const preset = values.preset as string | undefined;
    if (!preset) throw new UsageError(`--preset is required: one of ${Object.keys(loadPresets()).join(', ')}`);
    const algorithm = (values.algorithm as string | undefined) ?? defaultAlgorithm();
    if (!isAlgorithm(algorithm)) throw new UsageError(`--algorithm must be ${algorithmChoices()}, not "${algorithm}"`);
    const env: Record<string, string> = {};
    for (const e of list(values, 'env')) {
      const i = e.indexOf('=');
      if (i <= 0) throw new UsageError(`--env must be NAME=value (got "${e}")`);
      env[e.slice(0, i)] = e.slice(i + 1);
    }
    const overrides = ((values.override as string[] | undefined) ?? []).map(String);
    const json = values.json === true;
    const result = await submitTraining({
      cluster: clusterFrom(values),
      preset,
      algorithm,
      taskDirs: list(values, 'tasks'),
      trajectories: list(values, 'trajectories'),
      overrides,
      env,
      ...(typeof values.tag === 'string' ? { tag: values.tag } : {}),
      ...(typeof values.python === 'string' ? { python: values.python } : {}),
      onProgress: (m) => (json ? process.stderr : process.stdout).write(`${m}\n`),
    });
    if (json) console.log(JSON.stringify({ submissionId: result.submissionId, existed: result.existed, uploaded: result.uploaded, packageUri: result.packageUri, bundleBytes: result.bundleBytes, status: result.job.status, ray: result.ray.ray_version }));
    else console.log(`${result.existed ? 'Already submitted' : 'Submitted'}: ${result.submissionId}\n  follow: tbrl train logs ${result.submissionId} --follow --cluster ${clusterFrom(values).url}`);
    if (values.follow === true) return follow(new RayJobsClient(clusterFrom(values)), result.submissionId);
    return 0;
  },
};

async function follow(client: RayJobsClient, id: string): Promise<number> {
  const metrics = new MetricsParser();
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    const job = await client.tail(id, (text) => {
      process.stdout.write(text);
      metrics.push(text);
    }, { signal: controller.signal });
    metrics.end();
    if (controller.signal.aborted) {
      console.error(`\nDetached; the job keeps running. Stop it with: tbrl train stop ${id}`);
      return 130;
    }
    const c = metrics.canonical();
    const last = (k: keyof typeof c): string => (c[k].length ? String(Number(c[k][c[k].length - 1].value.toFixed(4))) : '-');
    console.log(`\n${describe(job)}\n  metrics: reward ${last('rewardMean')}, pass rate ${last('passRate')}, entropy ${last('entropy')}, grad norm ${last('gradNorm')}, DepGPO factor spread ${last('depgpoFactorSpread')}, tokens/s ${last('tokensPerSec')}`);
    return job.status === 'SUCCEEDED' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export const trainStatusCommand: CliCommand = {
  name: 'train status',
  summary: 'Status of a training job (with the error and the log tail when it failed)',
  usage: 'train status <job-id> --cluster URL [--json]',
  options: { ...clusterOptions, json: { type: 'boolean' } },
  async run({ positionals, values }) {
    const client = new RayJobsClient(clusterFrom(values));
    const job = await client.status(one(positionals, this.usage));
    if (values.json === true) {
      console.log(JSON.stringify(job, null, 2));
    } else {
      console.log(describe(job));
      if (job.status === 'FAILED') {
        const tail = (await client.logs(job.submission_id).catch(() => '')).split('\n').slice(-25).join('\n');
        console.log(`  error: ${job.error_type ?? 'unknown'}${job.driver_exit_code !== undefined && job.driver_exit_code !== null ? ` (exit code ${job.driver_exit_code})` : ''}\n--- last log lines ---\n${tail}`);
      }
    }
    return job.status === 'FAILED' ? 1 : 0;
  },
};

export const trainLogsCommand: CliCommand = {
  name: 'train logs',
  summary: 'Log of a training job; --follow streams it live (websocket) until the job ends, then prints the parsed metrics',
  usage: 'train logs <job-id> --cluster URL [--follow] [--metrics]',
  options: { ...clusterOptions, follow: { type: 'boolean' }, metrics: { type: 'boolean' } },
  async run({ positionals, values }) {
    const client = new RayJobsClient(clusterFrom(values));
    const id = one(positionals, this.usage);
    if (values.follow === true) return follow(client, id);
    const log = await client.logs(id);
    if (values.metrics === true) {
      const m = new MetricsParser();
      m.push(log);
      m.end();
      console.log(JSON.stringify({ canonical: m.canonical(), series: m.series, events: m.events }, null, 2));
    } else {
      process.stdout.write(log);
    }
    return 0;
  },
};

export const trainStopCommand: CliCommand = {
  name: 'train stop',
  summary: 'Stop a running training job',
  usage: 'train stop <job-id> --cluster URL [--wait]',
  options: { ...clusterOptions, wait: { type: 'boolean' } },
  async run({ positionals, values }) {
    const client = new RayJobsClient(clusterFrom(values));
    const id = one(positionals, this.usage);
    const stopped = await client.stop(id);
    if (!stopped) {
      const job = await client.status(id);
      console.log(`${id} was not running (${job.status}); nothing to stop.`);
      return 0;
    }
    console.log(`Stop requested for ${id}.`);
    if (values.wait === true) console.log(describe(await client.wait(id, { timeoutMs: 120_000 })));
    return 0;
  },
};

export const trainDeleteCommand: CliCommand = {
  name: 'train delete',
  summary: 'Delete a finished training job and its log from the cluster',
  usage: 'train delete <job-id> --cluster URL',
  options: { ...clusterOptions },
  async run({ positionals, values }) {
    const client = new RayJobsClient(clusterFrom(values));
    const id = one(positionals, this.usage);
    const job = await client.status(id);
    if (!TERMINAL_STATUSES.has(job.status)) throw new UsageError(`${id} is ${job.status}; stop it first (tbrl train stop ${id} --wait)`);
    await client.delete(id);
    console.log(`Deleted ${id}.`);
    return 0;
  },
};

export const trainListCommand: CliCommand = {
  name: 'train list',
  summary: 'Training jobs on the cluster (submitted by tbrl), newest first',
  usage: 'train list --cluster URL [--all] [--json]',
  options: { ...clusterOptions, all: { type: 'boolean' }, json: { type: 'boolean' } },
  async run({ positionals, values }) {
    noStrays(positionals);
    const client = new RayJobsClient(clusterFrom(values));
    const jobs = (await client.list())
      .filter((j) => values.all === true || (j.submission_id ?? '').startsWith('tbrl-'))
      .sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0));
    if (values.json === true) console.log(JSON.stringify(jobs, null, 2));
    else if (jobs.length === 0) console.log('No tbrl jobs on this cluster (--all shows every job).');
    else for (const j of jobs) console.log(`${describe(j)}  [${j.metadata?.preset ?? '?'} ${j.metadata?.algorithm ?? ''}]`);
    return 0;
  },
};

export const trainBundleCommand: CliCommand = {
  name: 'train bundle',
  summary: 'Build the job bundle without a cluster: the exact zip `train submit` would upload, to inspect or to run the entrypoint by hand',
  usage: `train bundle --preset P -o bundle.zip [--tasks dir,...] [--trajectories run-dir,...] [--algorithm ${ALGORITHM_FLAG}] [--override key=value]...`,
  options: {
    preset: { type: 'string' },
    tasks: { type: 'string', multiple: true },
    trajectories: { type: 'string', multiple: true },
    algorithm: { type: 'string' },
    override: { type: 'string', multiple: true },
    out: { type: 'string', short: 'o' },
  },
  async run({ positionals, values }) {
    noStrays(positionals);
    const preset = values.preset as string | undefined;
    if (!preset) throw new UsageError(`--preset is required: one of ${Object.keys(loadPresets()).join(', ')}`);
    getPreset(preset);
    const algorithm = (values.algorithm as string | undefined) ?? defaultAlgorithm();
    if (!isAlgorithm(algorithm)) throw new UsageError(`--algorithm must be ${algorithmChoices()}, not "${algorithm}"`);
    if (typeof values.out !== 'string') throw new UsageError('-o <file.zip> is required');
    const b = await buildBundle({
      preset,
      algorithm,
      taskDirs: list(values, 'tasks'),
      trajectories: list(values, 'trajectories'),
      overrides: ((values.override as string[] | undefined) ?? []).map(String),
      secrets: secretValuesFromEnv(process.env, [process.env.TBRL_RAY_TOKEN]),
    });
    writeFileSync(values.out, b.zip);
    console.log(`${values.out}: ${b.packageUri} (${(b.zip.length / 1024).toFixed(1)} KiB), ${b.manifest.tasks.length} task(s), ${b.manifest.trajectories.length} trajectory(ies), ${Object.keys(b.manifest.files).length} files`);
    return 0;
  },
};

export const trainCommands: CliCommand[] = [trainBundleCommand, trainSubmitCommand, trainStatusCommand, trainLogsCommand, trainStopCommand, trainDeleteCommand, trainListCommand];
