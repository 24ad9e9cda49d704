import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TbrlError } from '../../errors';
import type { Policy } from '../../agent/policy';
import { createOraclePolicy } from '../../agent/oracle';
import { loadSystemPrompt } from '../../agent/prompt';
import { createModelPolicy } from '../../agent/model-policy';
import type { VerifierConfig } from '../../verifier/types';
import { verifierConfigFrom } from '../../verifier/config';
import { loadTask } from '../../tasks/load';
import { allowListFrom } from '../../tasks/confine';
import type { Task } from '../../tasks/model';
import { TRAJECTORY_SCHEMA, type TrajectoryHeader } from '../../trajectory/schema';
import { VERSION } from '../../version';
import { startLocalServer, type LocalServer } from '../../serve/launch';
import { SERVER_PATH_ENV } from '../../serve/runtime';
import { loadPriceTable, priceOf } from '../../model/pricing';
import { resolveRunConfig, type ResolvedRunConfig } from '../config';
import { prepareFork } from '../fork';
import type { RunContext, RunEvent, RunTaskOptions } from '../context';

/** Run directory names: `<task>-<yyyymmdd-hhmmss>`. */
export function timestamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

export function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 60) || 'task';
}

export function buildPolicy(task: Task, config: ResolvedRunConfig, env: NodeJS.ProcessEnv, cwd: string): { policy: Policy; header: TrajectoryHeader['policy']; verifier?: TrajectoryHeader['verifier'] } {
  if (config.policy === 'oracle') return { policy: createOraclePolicy(task), header: { kind: 'oracle' } };
  const m = config.model!;
  // Our own server always has logprobs and token ids to give; a trainer wants them.
  const modelConfig = { baseUrl: m.baseUrl, model: m.model, apiKey: m.apiKey, temperature: m.temperature, maxTokens: m.maxTokens, contextTokens: m.contextTokens, ...(m.local ? { logprobs: true } : {}) };
  let verifier: VerifierConfig | undefined;
  let verifierHeader: TrajectoryHeader['verifier'];
  if (config.verifier && config.verifier !== 'none') {
    if (m.n < 2) throw new TbrlError('config-invalid', `The ${config.verifier} verifier needs several candidates to choose from, but n=${m.n}.`, 'Sample more candidates, e.g. --n 4, or drop --verifier.');
    // Same endpoint and model as the generator unless TBRL_VERIFIER_BASE_URL / _MODEL / _API_KEY say otherwise.
    verifier = verifierConfigFrom({ mode: config.verifier }, modelConfig, env);
    // The local default model rambles: its verdict line comes early or not at all, so long answers only cost time.
    if (m.local) verifier.maxOutputTokens ??= 48;
    verifierHeader = { mode: verifier.mode, n: m.n, model: verifier.endpoint.model };
  }
  return {
    policy: createModelPolicy(modelConfig, { n: m.n, verifier, price: priceOf(m.model, { local: !!m.local, table: loadPriceTable(cwd, env) }) }),
    header: { kind: 'model', model: m.model, baseUrl: m.baseUrl, n: m.n, ...(m.local ? { local: { modelPath: m.local.modelPath } } : {}) },
    verifier: verifierHeader,
  };
}

/**
 * Phase 1, prepare: the fork source, the task, the configuration, the policy (starting `tbrl serve`
 * for a local model), the system prompt, the run id and directory, and the trajectory header. It
 * makes the run context the other phases share. Nothing is on disk yet, so a failure here rejects
 * the run instead of ending a trajectory (the local server, if started, is stopped again).
 */
export async function prepare(options: RunTaskOptions): Promise<RunContext> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const warnings: string[] = [];
  const ctx = { phase: 'prepare' } as { phase: RunContext['phase'] };
  const progress = (event: RunEvent): void => options.onProgress?.({ ...event, phase: ctx.phase });
  const warn = (message: string): void => {
    warnings.push(message);
    progress({ type: 'warning', message });
  };

  const fork = options.forkFrom ? await prepareFork(options.forkFrom, cwd) : undefined;
  progress({ type: 'phase', message: `Loading task ${options.taskDir}` });
  const task = options.task ?? (await loadTask(resolve(cwd, options.taskDir), { allowPrivileges: options.allowPrivileges ?? allowListFrom(undefined, env) }));
  const config = resolveRunConfig(options, env, cwd);
  let policyHeader: TrajectoryHeader['policy'];
  let verifierHeader: TrajectoryHeader['verifier'];
  let policy: Policy;
  let localServer: LocalServer | undefined;
  if (options.policyOverride) {
    policy = options.policyOverride;
    policyHeader = { kind: policy.kind };
  } else {
    progress({ type: 'info', message: config.policyReason });
    if (config.model?.local) {
      // One sequence per candidate, plus one for the verifier (the same model) so that its prompt's
      // KV cache survives the policy's next turn instead of being overwritten by it.
      const verifierSequence = config.verifier && config.verifier !== 'none' ? 1 : 0;
      localServer = await startLocalServer({ modelPath: config.model.local.modelPath, sequences: config.model.n + verifierSequence, serverPath: env[SERVER_PATH_ENV] });
      config.model.baseUrl = localServer.baseUrl;
      config.model.model = localServer.model;
      progress({ type: 'info', message: `tbrl serve: ${localServer.model} on ${localServer.baseUrl} (pid ${localServer.pid}); stopped when the run ends` });
    }
    try {
      ({ policy, header: policyHeader, verifier: verifierHeader } = buildPolicy(task, config, env, cwd));
    } catch (err) {
      await localServer?.stop();
      throw err;
    }
  }
  const loaded = loadSystemPrompt(config.promptVersion);
  // A fork goes on with the conversation the source run had, so it keeps that run's prompt.
  const prompt = fork?.source.header.systemPrompt ? { version: fork.source.header.versions.promptVersion ?? loaded.version, text: fork.source.header.systemPrompt } : loaded;
  const previousAttempt = options.previousAttempt ?? (fork ? (fork.source.header.config.previousAttempt as string | undefined) : undefined);
  // The task's own agent timeout is the default wall-time limit, as in Terminal-Bench.
  const maxTimeSec = config.maxTimeSec ?? task.agentTimeoutSec;

  const started = new Date();
  const runId = `${safeName(task.id)}-${timestamp(started)}-${randomBytes(2).toString('hex')}`;
  const outDir = options.outDir ? resolve(cwd, options.outDir) : join(resolve(cwd, options.runsDir ?? 'runs'), `${safeName(task.id)}-${timestamp(started)}`);

  const header: TrajectoryHeader = {
    type: 'header',
    schema: TRAJECTORY_SCHEMA,
    runId,
    startedAt: started.toISOString(),
    task: { id: task.id, dir: task.dir, format: task.format, instruction: task.instruction },
    policy: policyHeader,
    ...(verifierHeader ? { verifier: verifierHeader } : {}),
    config: { policyDescription: policy.description, configSources: config.sources, checkpoint: !!options.checkpoint, trace: options.trace ?? true, ...(previousAttempt ? { previousAttempt } : {}), ...(Array.isArray(task.extra.allowedPrivileges) ? { allowedPrivileges: task.extra.allowedPrivileges } : {}) },
    versions: { tbrl: VERSION, node: process.version, promptVersion: prompt.version },
    systemPrompt: prompt.text,
    limits: { maxSteps: config.maxSteps, maxTimeSec, ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}) },
    ...(fork ? { forkedFrom: { runId: fork.source.header.runId, step: fork.checkpoint.step, trajectory: fork.source.path } } : {}),
  };

  return Object.assign(ctx, {
    options,
    cwd,
    env,
    progress,
    warn,
    warnings,
    fork,
    task,
    config,
    policy,
    prompt,
    previousAttempt,
    maxTimeSec,
    runId,
    outDir,
    trajectoryPath: join(outDir, 'trajectory.jsonl'),
    reportPath: join(outDir, 'report.md'),
    header,
    localServer,
    steps: [],
    rewardHooks: [],
  }) satisfies RunContext;
}
