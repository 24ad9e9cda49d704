import { buildBundle, sha256 } from './bundle';
import type { Bundle, BundleOptions } from './bundle';
import { RayJobsClient } from './jobs';
import type { JobDetails, SubmitRequest } from './jobs';
import type { ClusterOptions, RayVersion } from './connection';
import { refuseSecrets, scanText, secretNamedKeys, secretValuesFromEnv } from './secrets';
import { getPreset } from './presets';

/** What goes into the bundle comes from BundleOptions; the rest says where and how to submit it. */
export interface SubmitOptions extends Pick<BundleOptions, 'preset' | 'algorithm' | 'taskDirs' | 'trajectories' | 'overrides' | 'env' | 'bridgeDir'> {
  cluster: ClusterOptions;
  /** Distinguishes deliberate re-runs of identical inputs; part of the submission id. */
  tag?: string;
  /** Python on the cluster nodes; default `python`. */
  python?: string;
  /** Where local secrets are looked up to make sure none is sent; default process.env. */
  localEnv?: NodeJS.ProcessEnv;
  onProgress?: (message: string) => void;
}

export interface SubmitResult {
  submissionId: string;
  /** True when this exact job already existed (a retried submit): nothing new was started. */
  existed: boolean;
  uploaded: boolean;
  packageUri: string;
  bundleBytes: number;
  ray: RayVersion;
  job: JobDetails;
  request: SubmitRequest;
  bundle: Bundle;
}

/**
 * Bundle, upload (only when the cluster lacks that content) and submit. The submission id is a hash
 * of everything that defines the run, so a retry after a timeout finds the job it already started.
 */
export async function submitTraining(options: SubmitOptions): Promise<SubmitResult> {
  const progress = options.onProgress ?? (() => {});
  getPreset(options.preset, options.bridgeDir);
  const secrets = secretValuesFromEnv(options.localEnv ?? process.env, [options.cluster.token]);
  const client = new RayJobsClient(options.cluster);
  progress(`Connecting to ${client.conn.base.href}`);
  const ray = await client.version();
  progress(`Ray ${ray.ray_version} (Jobs API v${ray.version})`);

  const bundle = await buildBundle({
    preset: options.preset,
    algorithm: options.algorithm,
    taskDirs: options.taskDirs,
    trajectories: options.trajectories,
    overrides: options.overrides,
    env: options.env,
    secrets,
    bridgeDir: options.bridgeDir,
  });
  progress(`Bundle ${bundle.packageUri} (${(bundle.zip.length / 1024).toFixed(1)} KiB, ${bundle.manifest.tasks.length} task(s), ${bundle.manifest.trajectories.length} trajectory(ies))`);

  const request = jobRequest(bundle, options);
  refuseSecrets([
    ...scanText('runtime_env', JSON.stringify(request.runtime_env), secrets),
    ...scanText('metadata', JSON.stringify(request.metadata), secrets),
    ...scanText('entrypoint', request.entrypoint, secrets),
    ...secretNamedKeys('runtime_env.env_vars', request.runtime_env.env_vars),
  ]);

  const existing = await client.find(request.submission_id);
  if (existing) {
    progress(`Job ${request.submission_id} already exists (${existing.status}); not starting a second run`);
    return { submissionId: request.submission_id, existed: true, uploaded: false, packageUri: bundle.packageUri, bundleBytes: bundle.zip.length, ray, job: existing, request, bundle };
  }
  // GET pins the package for Ray's temporary-reference window (10 min by default); the submit follows at once.
  const uploaded = await client.ensurePackage(bundle.packageUri, bundle.zip);
  progress(uploaded ? `Uploaded ${bundle.packageUri}` : `${bundle.packageUri} already on the cluster; not uploading`);
  const res = await client.submit(request);
  progress(`${res.existed ? 'Found' : 'Submitted'} ${res.submissionId} (${res.job.status})`);
  return { submissionId: res.submissionId, existed: res.existed, uploaded, packageUri: bundle.packageUri, bundleBytes: bundle.zip.length, ray, job: res.job, request, bundle };
}

export function jobRequest(bundle: Bundle, options: Pick<SubmitOptions, 'preset' | 'algorithm' | 'env' | 'tag' | 'python' | 'bridgeDir'>): SubmitRequest {
  const python = options.python ?? 'python';
  const entrypoint = `${python} -m tbrl_bridge.entrypoint --preset ${options.preset} --algorithm ${options.algorithm}`;
  // Job-level env vars reach every Ray worker, including rLLM's TaskRunner actor where advantages are computed.
  const env_vars: Record<string, string> = { ...(options.env ?? {}), PYTHONUNBUFFERED: '1', TBRL_ALGORITHM: options.algorithm };
  const runtime_env = { working_dir: bundle.packageUri, env_vars };
  const key = sha256(JSON.stringify({ package: bundle.packageUri, entrypoint, env_vars, tag: options.tag ?? '' })).slice(0, 16);
  const preset = getPreset(options.preset, options.bridgeDir);
  return {
    entrypoint,
    submission_id: `tbrl-${options.preset.replace(/_/g, '-')}-${key}`,
    runtime_env,
    metadata: {
      tbrl: bundle.manifest.versions.tbrl,
      preset: options.preset,
      algorithm: options.algorithm,
      bundle: bundle.sha256.slice(0, 16),
      tasks: String(bundle.manifest.tasks.length),
      trajectories: String(bundle.manifest.trajectories.length),
      ...(options.tag ? { tag: options.tag } : {}),
    },
    ...(preset.entrypointNumCpus !== undefined ? { entrypoint_num_cpus: preset.entrypointNumCpus } : {}),
  };
}
