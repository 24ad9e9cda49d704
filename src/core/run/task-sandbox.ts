import { dirname } from 'node:path';
import { TbrlError } from '../errors';
import type { ImageSource, Sandbox, SandboxProvider, SandboxSpec, SidecarSpec, Sidecars } from '../sandbox/types';
import { ansiCQuote } from '../sandbox/bash-quote';
import { tarOf } from '../reward/archive';
import type { Task } from '../tasks/model';
import { taskFormat } from '../tasks/formats';
import { assertHarborRuntimeSupported, resolveEnvTemplates, type HarborHealthcheck, type HarborSidecar } from '../tasks/harbor-runtime';

/**
 * The sandbox a task asks for, with Harbor's runtime settings honoured: resource limits, workdir,
 * container env (`${VAR}` resolved from the host), network mode, the agent's user, compose sidecars
 * on the task's own network, and the healthcheck waited for before anything runs. Terminal-Bench
 * and in-memory tasks get the plain sandbox they always had.
 */
export interface TaskSandboxOptions {
  provider: SandboxProvider;
  runId: string;
  hostEnv?: NodeJS.ProcessEnv;
  image?: ImageSource;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export function taskImageSource(task: Task): ImageSource {
  return 'image' in task.environment ? { kind: 'image', image: task.environment.image } : { kind: 'dockerfile', context: task.environment.context, dockerfile: task.environment.dockerfile };
}

/** The SandboxSpec fields a task's own settings decide (both formats). */
export function taskSandboxSpec(task: Task, hostEnv: NodeJS.ProcessEnv): Pick<SandboxSpec, 'network' | 'limits' | 'env' | 'workdir' | 'user'> {
  const rt = task.harbor;
  if (!rt) return { network: task.allowInternet };
  const e = rt.environment;
  return {
    network: e.network === 'public',
    limits: {
      ...(e.cpus !== undefined ? { cpus: e.cpus } : {}),
      ...(e.memoryMb !== undefined ? { memoryBytes: e.memoryMb * 1024 ** 2 } : {}),
      ...(e.storageMb !== undefined ? { diskBytes: e.storageMb * 1024 ** 2 } : {}),
    },
    env: resolveEnvTemplates(e.env, hostEnv, '[environment].env'),
    ...(e.workdir !== undefined ? { workdir: e.workdir } : {}),
    ...(rt.agent.user !== undefined ? { user: rt.agent.user } : {}),
  };
}

export async function createTaskSandbox(task: Task, options: TaskSandboxOptions): Promise<Sandbox> {
  const hostEnv = options.hostEnv ?? process.env;
  const rt = task.harbor;
  assertHarborRuntimeSupported(rt, task.id);
  const spec: SandboxSpec = { image: options.image ?? taskImageSource(task), runId: options.runId, onProgress: options.onProgress, signal: options.signal, ...taskSandboxSpec(task, hostEnv) };
  let sidecars: Sidecars | undefined;
  if (rt && rt.sidecars.length > 0) {
    if (!options.provider.startSidecars) {
      throw new TbrlError('TASK_UNSUPPORTED_FIELD', `Task ${task.id} has compose sidecars (${rt.sidecars.map((s) => s.name).join(', ')}), which only the Docker sandbox can start.`, 'Run it with the Docker sandbox provider.');
    }
    sidecars = await options.provider.startSidecars(sidecarSpecs(rt.sidecars, hostEnv), { runId: options.runId, internet: spec.network === true, onProgress: options.onProgress, signal: options.signal });
    spec.networkName = sidecars.network;
  }
  let sandbox: Sandbox;
  try {
    sandbox = await options.provider.create(spec);
  } catch (err) {
    await sidecars?.close();
    throw err;
  }
  if (sidecars) chainClose(sandbox, sidecars.close);
  try {
    if (rt?.environment.healthcheck) await waitHealthy(sandbox, rt.environment.healthcheck, '[environment.healthcheck]', options.signal);
    const agentEnv = rt ? resolveEnvTemplates(rt.agent.env, hostEnv, '[agent].env') : {};
    if (Object.keys(agentEnv).length > 0) await exportInShell(sandbox, agentEnv);
  } catch (err) {
    await sandbox.close().catch(() => undefined);
    throw err;
  }
  return sandbox;
}

function chainClose(sandbox: Sandbox, after: () => Promise<void>): void {
  const close = sandbox.close.bind(sandbox);
  (sandbox as { close: () => Promise<void> }).close = async () => {
    try {
      await close();
    } finally {
      await after();
    }
  };
}

/** Exports variables into the persistent shell: the agent's (or oracle's) commands see them, the verifier (PID 1's env) does not. */
export async function exportInShell(sandbox: Sandbox, env: Record<string, string>): Promise<void> {
  const lines = Object.entries(env).map(([k, v]) => `export ${k}=${ansiCQuote(v)}`);
  const r = await sandbox.exec(lines.join('\n'), { timeoutMs: 30_000 });
  if (r.exitCode !== 0) throw new TbrlError('ENV_SETUP_FAILED', `could not export the task's environment variables: ${r.output.trim().slice(0, 300)}`, 'Check the variable names in task.toml (letters, digits and _).');
}

/** Docker-HEALTHCHECK semantics: failures during the start period do not count; `retries` consecutive failures fail. */
export async function waitHealthy(sandbox: Sandbox, hc: HarborHealthcheck, field: string, signal?: AbortSignal): Promise<void> {
  const started = Date.now();
  let failures = 0;
  let last = '';
  for (;;) {
    signal?.throwIfAborted();
    const r = await sandbox.execArgv(['/bin/sh', '-c', hc.command], { timeoutMs: hc.timeoutSec * 1000 });
    if (r.exitCode === 0) return;
    last = r.timedOut ? `timed out after ${hc.timeoutSec}s` : `exit ${r.exitCode}: ${r.output.trim().split('\n').slice(-2).join(' | ').slice(0, 200)}`;
    const inStart = (Date.now() - started) / 1000 < hc.startPeriodSec;
    if (!inStart && ++failures >= Math.max(1, hc.retries)) break;
    await new Promise((resolve) => setTimeout(resolve, (inStart ? hc.startIntervalSec : hc.intervalSec) * 1000));
  }
  throw new TbrlError(
    'ENV_HEALTHCHECK_FAILED',
    `the environment never became healthy: ${field} command \`${hc.command}\` failed ${failures} time(s) in a row (last: ${last})`,
    'Check that the image starts the service the healthcheck probes (its ENTRYPOINT/CMD), or fix the command in task.toml.',
  );
}

/** The compose services of a Harbor task in the sandbox's terms: images to start, env resolved from the host. */
export function sidecarSpecs(services: HarborSidecar[], hostEnv: NodeJS.ProcessEnv): SidecarSpec[] {
  return services.map((s) => ({
    name: s.name,
    image: s.build ? { kind: 'dockerfile', context: s.build.context, dockerfile: s.build.dockerfile ?? 'Dockerfile' } : { kind: 'image', image: s.image! },
    env: resolveEnvTemplates(s.environment, hostEnv, `compose service ${s.name} environment`),
    ...(s.command ? { command: s.command } : {}),
    ...(s.entrypoint ? { entrypoint: s.entrypoint } : {}),
    ...(s.healthcheck ? { healthcheck: s.healthcheck } : {}),
  }));
}

/**
 * The reference solution's directory at /solution (Harbor's oracle uploads solution/ there), for the
 * oracle only: agent runs never get it. Returns the variables of [solution].env to export as well.
 */
export async function installSolution(task: Task, sandbox: Sandbox, hostEnv: NodeJS.ProcessEnv = process.env): Promise<void> {
  const target = taskFormat(task.format)?.oracleSolutionDir;
  if (!target || task.solution?.kind !== 'script') return;
  await sandbox.execArgv(['/bin/sh', '-c', `rm -rf ${target} && mkdir -p ${target} && chmod 755 ${target}`], { timeoutMs: 30_000, user: '0' });
  await sandbox.putArchive(await tarOf(dirname(task.solution.path), []), target);
  const env = task.harbor ? resolveEnvTemplates(task.harbor.solution.env, hostEnv, '[solution].env') : {};
  if (Object.keys(env).length > 0) await exportInShell(sandbox, env);
}

/**
 * Harbor's `environment_mode = "separate"`: the verifier gets a container of its own over the
 * agent's final filesystem (a commit of it), with none of the agent's processes or shell state.
 * Shared mode (the default) runs it in the agent's container.
 */
export async function withVerifierSandbox<T>(task: Task, sandbox: Sandbox, provider: SandboxProvider, runId: string, body: (verifier: Sandbox) => Promise<T>, hostEnv: NodeJS.ProcessEnv = process.env): Promise<T> {
  if (task.harbor?.verifier.mode !== 'separate') return body(sandbox);
  const checkpoint = await sandbox.checkpoint(-1);
  let verifier: Sandbox | undefined;
  try {
    const v = task.harbor.verifier;
    // Its own container: the verifier's network_mode and user apply to the whole of it.
    verifier = await provider.fork(checkpoint, {
      runId,
      ...taskSandboxSpec(task, hostEnv),
      workdir: checkpoint.cwd,
      ...(v.network ? { network: v.network === 'public' } : {}),
      ...(v.user !== undefined ? { user: v.user } : {}),
    });
    return await body(verifier);
  } finally {
    await verifier?.close().catch(() => undefined);
    await provider.removeCheckpoint(checkpoint).catch(() => undefined);
  }
}

/** runTests options from Harbor's [verifier]: its env (resolved) and, when it differs from the agent's, its user. */
export function verifierTestOptions(task: Task, hostEnv: NodeJS.ProcessEnv = process.env): { env?: Record<string, string>; user?: string } {
  const v = task.harbor?.verifier;
  if (!v) return {};
  const env = resolveEnvTemplates(v.env, hostEnv, '[verifier].env');
  return {
    ...(Object.keys(env).length > 0 ? { env } : {}),
    // A separate verifier's container already runs as its user (withVerifierSandbox).
    ...(v.user !== undefined && v.user !== task.harbor?.agent.user && v.mode === 'shared' ? { user: v.user } : {}),
  };
}
