import { writeFileSync } from 'node:fs';
import type Docker from 'dockerode';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TbrlError, errorMessage } from '../errors';
import type { Policy } from '../agent/policy';
import { runAgentLoop, type BeforeExecuteDecision, type LoopOptions, type LoopResult, type PendingTurn } from '../agent/loop';
import { createOraclePolicy } from '../agent/oracle';
import { loadSystemPrompt } from '../agent/prompt';
import { createModelPolicy } from '../model/policy';
import type { VerifierConfig } from '../verifier/types';
import { verifierConfigFrom } from '../verifier/config';
import type { ImageSource, Sandbox, SandboxProvider } from '../sandbox/types';
import { DockerSandboxProvider } from '../sandbox/provider';
import { createTracedSandbox } from '../trace/traced-sandbox';
import { loadTask } from '../tasks/load';
import { allowListFrom } from '../tasks/confine';
import type { Task } from '../tasks/model';
import { TrajectoryWriter } from '../trajectory/writer';
import { TRAJECTORY_SCHEMA } from '../trajectory/schema';
import type { DepgpoRecord, RewardRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import type { VerifierTrace } from '../trace/types';
import { VERSION } from '../version';
import { resolveRunConfig, type ResolvedRunConfig, type RunConfigInput } from './config';
import { depgpoInput, toDepgpoRecord } from '../depgpo/trajectory';
import { computeDepgpo } from '../depgpo/compute';
import { renderReport } from './report';
import { combineReward, computeReward } from '../reward/index';
import type { TestRunResult } from '../reward/tests';
import { runStepsWithAgent } from './harbor-steps';
import { createProgressRecorder, type ProgressRecorder } from '../synth/progress';
import { snapshotChangedFiles, ORIGINALS_DIR, SNAPSHOT_DIR } from '../attribution/snapshot';
import { containerImage, imageOriginals, originalImageOf, unknownOriginals, workspaceOriginals, type OriginalSource } from '../attribution/originals';
import { readTrajectory } from '../trajectory/reader';
import { DockerSandbox } from '../sandbox/docker-sandbox';
import { connectDocker } from '../sandbox/docker-client';
import { ImageMissingError } from '../sandbox/errors';
import { createTaskSandbox, installSolution, verifierTestOptions, withVerifierSandbox } from './task-sandbox';
import { startLocalServer, type LocalServer } from '../serve/launch';
import { loadPriceTable, priceOf } from '../model/pricing';
import { conversationThrough, prepareFork, restoreShellState, type ForkSource, type PreparedFork } from './fork';
import { classifyOutcome } from './classify-outcome';

export type RunProgress =
  | { type: 'info'; message: string }
  | { type: 'build'; line: string }
  | { type: 'phase'; phase: 'task' | 'sandbox' | 'agent' | 'reward' | 'depgpo' | 'report'; message: string }
  | { type: 'step-start'; step: number }
  | { type: 'step'; step: StepRecord }
  | { type: 'warning'; message: string };

export interface RunTaskOptions extends RunConfigInput {
  taskDir: string;
  /** Exact output directory; default `<runsDir>/<task>-<timestamp>`. */
  outDir?: string;
  /** Parent of per-run directories; default `<cwd>/runs`. */
  runsDir?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** A ready policy (scripted in tests, human in the editor); skips endpoint resolution. */
  policyOverride?: Policy;
  sandboxProvider?: SandboxProvider;
  onProgress?: (event: RunProgress) => void;
  signal?: AbortSignal;
  beforeExecute?: (step: number, turn: PendingTurn) => Promise<BeforeExecuteDecision>;
  /** Commit the container after each step so the debugger can fork or step back. */
  checkpoint?: boolean;
  /** Trace commands for DepGPO (default on; the sandbox says when it cannot). */
  trace?: boolean;
  /** Skip the reward (e.g. an editor session that only explores). */
  skipReward?: boolean;
  /** Sequential Refine: what the previous attempt did and how it ended, shown with the task. */
  previousAttempt?: string;
  /** Privilege keys the user allowed by name (tasks/confine.ts); recorded in the header. */
  allowPrivileges?: string[];
  /**
   * Branch from step k of an earlier run: its container comes back from step k's checkpoint, steps
   * 0..k are copied into the new trajectory (header.forkedFrom says from where) and the policy goes
   * on from step k+1. `maxSteps` still counts the whole run, copied steps included.
   */
  forkFrom?: ForkSource;
  /** An in-memory task (e.g. the user's own workspace); `taskDir` is then only its label. */
  task?: Task;
  /** Start the sandbox from this image source instead of task.environment (e.g. a devcontainer, workspace copied in). */
  sandboxImage?: ImageSource;
  /** Score the run with this instead of the task's tests (e.g. a user's verify command). */
  scoreRun?: (sandbox: Sandbox, signal?: AbortSignal) => Promise<RewardRecord>;
  /** Last look at the container before it is removed (e.g. to collect the workspace changes). */
  beforeClose?: (sandbox: Sandbox, outDir: string) => Promise<void>;
}

export interface RunTaskResult {
  runId: string;
  outDir: string;
  trajectoryPath: string;
  reportPath: string;
  header: TrajectoryHeader;
  steps: StepRecord[];
  footer: TrajectoryFooter;
  policyDescription: string;
  warnings: string[];
}

const SANDBOX_LOST_CODES = new Set(['DOCKER_DIED', 'CONTAINER_GONE']);

/** Run directory names: `<task>-<yyyymmdd-hhmmss>`. */
export function timestamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

export function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 60) || 'task';
}

function buildPolicy(task: Task, config: ResolvedRunConfig, env: NodeJS.ProcessEnv, cwd: string): { policy: Policy; header: TrajectoryHeader['policy']; verifier?: TrajectoryHeader['verifier'] } {
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
 * One run end to end: task → sandbox → agent loop → reward → DepGPO → footer and report. The
 * sandbox is always closed; an error or interrupt still leaves a trajectory whose footer says so.
 */
export async function runTask(options: RunTaskOptions): Promise<RunTaskResult> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => {});
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    progress({ type: 'warning', message });
  };

  const fork = options.forkFrom ? await prepareFork(options.forkFrom, cwd) : undefined;
  progress({ type: 'phase', phase: 'task', message: `Loading task ${options.taskDir}` });
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
      localServer = await startLocalServer({ modelPath: config.model.local.modelPath, sequences: config.model.n });
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
  const trajectoryPath = join(outDir, 'trajectory.jsonl');
  const reportPath = join(outDir, 'report.md');

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

  let writer: TrajectoryWriter | undefined;
  let sandbox: Sandbox | undefined;
  const steps: StepRecord[] = [];
  let loop: LoopResult | undefined;
  let reward: RewardRecord | undefined;
  let verifierTrace: VerifierTrace | undefined;
  let depgpo: DepgpoRecord | undefined;
  let progressRecorder: ProgressRecorder | undefined;
  let failure: unknown;

  try {
    progress({ type: 'phase', phase: 'sandbox', message: `Starting the sandbox (${options.sandboxImage?.kind === 'devcontainer' ? `devcontainer of ${options.sandboxImage.workspaceFolder}` : 'image' in task.environment ? task.environment.image : `building ${task.environment.dockerfile}`})` });
    const provider = options.sandboxProvider ?? new DockerSandboxProvider();
    const inner = fork
      ? await forkSandbox(provider, fork, { runId, network: task.allowInternet, onProgress: (line) => progress({ type: 'build', line }), signal: options.signal })
      : await createTaskSandbox(task, { provider, runId, image: options.sandboxImage, hostEnv: env, onProgress: (line) => progress({ type: 'build', line }), signal: options.signal });
    // Harbor's oracle finds its solution/ at /solution; a model's run never does.
    if (!fork && policyHeader.kind === 'oracle') await installSolution(task, inner, env);
    // Tracing is best effort: when the helper cannot start, the run goes on untraced and the header says why.
    try {
      sandbox = await createTracedSandbox(inner, { enabled: options.trace !== false });
    } catch (err) {
      sandbox = inner;
      warn(`Tracing could not be set up: ${errorMessage(err)}`);
    }
    // Tev tasks carry a progress contract: Φ per step and PPRS on the final reward. A no-op otherwise.
    if (fork) await restoreShellState(sandbox, fork.checkpoint);
    progressRecorder = createProgressRecorder(sandbox, task, { onError: warn });
    const info = sandbox.info;
    const docker = provider instanceof DockerSandboxProvider ? provider.docker : connectDocker().docker;
    // A fork's container comes from a checkpoint; its files' originals are the root run's image's.
    const originalImage = fork
      ? await originalImageOf(fork.source.header, async (p) => (await readTrajectory(resolve(cwd, p))).header)
      : await containerImage(docker, info.containerId, info.image);
    header.sandbox = {
      image: info.image,
      ...(info.substitutedFrom ? { substitutedFrom: info.substitutedFrom } : {}),
      ...(info.workspaceMode ? { workspaceMode: info.workspaceMode } : {}),
      tracing: info.tracing,
      ...(originalImage ? { originalImage } : {}),
    };
    if (info.entrypointNote) warn(info.entrypointNote);
    if (!info.tracing.available) warn(`Tracing is off (${info.tracing.reason ?? 'unavailable'}): DepGPO will fall back to f_t = 1.`);
    writer = TrajectoryWriter.create(trajectoryPath, header);
    for (const s of fork?.copied ?? []) {
      writer.appendStep(s);
      steps.push(s);
    }

    progress({ type: 'phase', phase: 'agent', message: `Running ${policy.description} (max ${config.maxSteps} steps, ${maxTimeSec} s${config.maxTokens ? `, ${config.maxTokens} tokens` : ''})` });
    const w = writer;
    const loopOptions: LoopOptions = {
      policy,
      sandbox,
      task,
      systemPrompt: prompt.text,
      limits: { maxSteps: Math.max(0, config.maxSteps - (fork?.copied.length ?? 0)), maxTimeMs: maxTimeSec * 1000, maxTokens: config.maxTokens },
      trace: options.trace ?? true,
      checkpoint: options.checkpoint,
      previousAttempt,
      ...(fork ? { resume: { messages: conversationThrough(prompt.text, task, fork.copied, previousAttempt), state: fork.state, nextStep: fork.copied.length } } : {}),
      beforeExecute: options.beforeExecute,
      signal: options.signal,
      onStep: async (s) => {
        // Φ must be on the step before it is written: the line is final once appended.
        await progressRecorder?.onStep(s);
        w.appendStep(s);
        steps.push(s);
      },
      onEvent: (e) => {
        if (e.type === 'step-start') progress({ type: 'step-start', step: e.step });
        if (e.type === 'step-done') progress({ type: 'step', step: e.step });
      },
    };
    // Harbor [[steps]]: each step's agent turn and verifier in order (harbor-steps.ts); the steps' reward is the run's.
    let stepsTestRun: TestRunResult | undefined;
    if (task.harbor?.steps && !fork) {
      const ran = await runStepsWithAgent({ task, sandbox, provider, runId, loopOptions, hostEnv: env, ...(policyHeader.kind === 'oracle' ? { oracleFor: createOraclePolicy } : {}), onStepStart: (s) => progress({ type: 'info', message: `Step ${s.name}` }) });
      loop = ran.loop;
      stepsTestRun = ran.testRun;
      if (ran.stoppedAt) warn(`Stopped after step ${ran.stoppedAt}.`);
    } else loop = await runAgentLoop(loopOptions);

    const kept = steps.filter((s) => s.checkpoint && !fork?.copied.includes(s)).length;
    if (kept > 0) progress({ type: 'info', message: `${kept} checkpoint image(s) kept for fork / step back; \`tbrl gc\` removes them once this process has exited.` });
    const interrupted = loop.endReason === 'interrupted' || loop.endReason === 'cancelled';
    if (!options.skipReward && !interrupted && options.scoreRun) {
      progress({ type: 'phase', phase: 'reward', message: 'Scoring the run' });
      reward = await options.scoreRun(sandbox, options.signal);
    } else if (!options.skipReward && !interrupted && task.harbor?.steps && !fork) {
      reward = combineReward(stepsTestRun ?? { error: { kind: 'sandbox-error', message: loop.endMessage ?? 'no step was verified', logTail: '' } }, undefined);
    } else if (!options.skipReward && !interrupted) {
      progress({ type: 'phase', phase: 'reward', message: config.judge ? `Running the tests and the judge (${config.judge.model})` : 'Running the tests' });
      const judge = config.judge ? { backend: { kind: 'openai' as const, ...config.judge } } : undefined;
      const agentSandbox = sandbox;
      const r = await withVerifierSandbox(task, agentSandbox, provider, runId, (verifierSandbox) =>
        computeReward({ task, sandbox: verifierSandbox, trajectoryLines: [header, ...steps], signal: options.signal, tests: verifierTestOptions(task, env), ...(judge ? { judge } : {}) }), env);
      reward = await progressRecorder.finish(r.reward);
      verifierTrace = r.verifierTrace;
      if (reward.testError) warn(`The tests could not be scored (${reward.testError.kind}): ${reward.testError.message}`);

      progress({ type: 'phase', phase: 'depgpo', message: 'Computing DepGPO credit' });
      try {
        const input = { ...depgpoInput({ header, steps }), ...(verifierTrace ? { verifier: verifierTrace } : {}) };
        const result = computeDepgpo(input);
        depgpo = toDepgpoRecord(result, input.commands);
        for (const m of result.warnings) warn(`DepGPO: ${m}`);
      } catch (err) {
        // Credit assignment is an add-on: the run and its reward stand without it.
        warn(`DepGPO could not be computed: ${errorMessage(err)}`);
      }
    }
    // The container goes away with close(): keep the final content of what the agent changed for the editor.
    if (loop && !options.signal?.aborted) {
      const originals = originalsOf(header, inner, docker, runId);
      try {
        const snapshot = await snapshotChangedFiles(sandbox, steps, outDir, { originals });
        const missed = snapshot.skipped.filter((s) => !s.reason.startsWith('deleted'));
        if (missed.length > 0) warn(`Changed files left out of ${SNAPSHOT_DIR}/: ${missed.map((s) => `${s.path} (${s.reason})`).join('; ')}`);
        const noOriginal = snapshot.files.flatMap((f) => (f.original?.status === 'skipped' ? [`${f.path} (${f.original.reason})`] : []));
        if (noOriginal.length > 0) warn(`Originals left out of ${ORIGINALS_DIR}/ (those files open without a diff): ${noOriginal.join('; ')}`);
      } catch (err) {
        warn(`The changed files could not be saved: ${errorMessage(err)}`);
      } finally {
        await originals.close();
      }
    }
    if (options.beforeClose && loop && !options.signal?.aborted) {
      try {
        await options.beforeClose(sandbox, outDir);
      } catch (err) {
        warn(`Collecting the final state failed: ${errorMessage(err)}`);
      }
    }
  } catch (err) {
    failure = err;
  } finally {
    if (sandbox) {
      await sandbox.close().catch((err) => warn(`Closing the sandbox failed: ${errorMessage(err)}`));
    }
    await localServer?.stop().catch((err) => warn(`Stopping tbrl serve failed: ${errorMessage(err)}`));
  }

  const aborted = options.signal?.aborted;
  // Losing the Docker daemon or the container is an interruption of the run, not a fault of the
  // agent: the steps so far are kept and the run can be forked from its last checkpoint.
  const lostSandbox = failure instanceof TbrlError && SANDBOX_LOST_CODES.has(failure.code);
  const endReason: TrajectoryFooter['endReason'] = failure
    ? aborted ? (options.signal?.reason === 'interrupted' ? 'interrupted' : 'cancelled') : lostSandbox ? 'interrupted' : 'error'
    : loop!.endReason;
  const footer: TrajectoryFooter = {
    type: 'footer',
    endedAt: new Date().toISOString(),
    endReason,
    ...(failure ? { endMessage: errorMessage(failure) } : loop?.endMessage ? { endMessage: loop.endMessage } : {}),
    steps: steps.length,
    ...(reward ? { reward } : {}),
    ...(verifierTrace ? { verifierTrace } : {}),
    ...(depgpo ? { depgpo } : {}),
    usage: {
      promptTokens: steps.reduce((a, s) => a + s.usage.promptTokens, 0),
      completionTokens: steps.reduce((a, s) => a + s.usage.completionTokens, 0),
      verifierCalls: steps.reduce((a, s) => a + (s.decision?.calls ?? 0), 0),
      verifierOutputTokens: steps.reduce((a, s) => a + (s.decision?.outputTokens ?? 0), 0),
    },
  };
  footer.outcome = classifyOutcome({ failure, endReason, endMessage: footer.endMessage, reward, skipReward: options.skipReward, substitutedFrom: header.sandbox?.substitutedFrom });
  // A failure before the sandbox existed still leaves a trajectory that says what happened.
  if (!writer) {
    try {
      writer = TrajectoryWriter.create(trajectoryPath, header);
    } catch (err) {
      if (!failure) failure = err;
    }
  }
  if (writer && !writer.closed) writer.writeFooter(footer);

  progress({ type: 'phase', phase: 'report', message: `Writing ${reportPath}` });
  const result: RunTaskResult = { runId, outDir, trajectoryPath, reportPath, header, steps, footer, policyDescription: policy.description, warnings };
  if (writer) writeFileSync(reportPath, renderReport({ header, steps, footer, policyDescription: policy.description, trajectoryPath, warnings }));
  if (failure) {
    const err = failure instanceof TbrlError ? failure : new TbrlError('run-failed', `The run failed: ${errorMessage(failure)}`, `See ${trajectoryPath} for the steps that completed.`, { cause: failure });
    (err as TbrlError & { result?: RunTaskResult }).result = result;
    throw err;
  }
  return result;
}

/** Where the run's changed files' originals are read from: the root image, and the host folder for a copied-in workspace. */
function originalsOf(header: TrajectoryHeader, inner: Sandbox, docker: Docker, runId: string): OriginalSource {
  const image = header.sandbox?.originalImage;
  if (!image) return unknownOriginals(`the image the run started from is not known (the run it was forked from, ${header.forkedFrom?.trajectory ?? 'unknown'}, has no readable header chain back to its root)`);
  const fromImage = imageOriginals(docker, image, runId);
  const workspace = inner instanceof DockerSandbox ? inner.workspace : undefined;
  return workspace ? workspaceOriginals(fromImage, workspace) : fromImage;
}

/** The container of a fork, with the checkpoint's absence said in terms of what to do about it. */
async function forkSandbox(provider: SandboxProvider, fork: PreparedFork, spec: Parameters<SandboxProvider['fork']>[1]): Promise<Sandbox> {
  try {
    return await provider.fork(fork.checkpoint, spec);
  } catch (err) {
    if (err instanceof ImageMissingError) {
      throw new TbrlError(
        'fork-checkpoint-gone',
        `The checkpoint image of step ${fork.checkpoint.step} (${fork.checkpoint.imageId}) of run ${fork.checkpoint.runId} no longer exists: \`tbrl gc\` removes checkpoints once the run's process has exited.`,
        'Re-run the task with --checkpoint (or "checkpoint": true in launch.json) and fork from the new run before collecting it.',
        { cause: err },
      );
    }
    throw err;
  }
}

/** `tbrl run --fork-from <trajectory> --step K`: a new run from step K's checkpoint of an earlier run, on its task. */
export async function forkRun(options: Omit<RunTaskOptions, 'taskDir' | 'forkFrom'> & ForkSource & { taskDir?: string }): Promise<RunTaskResult> {
  const { trajectoryPath, step, ...rest } = options;
  const taskDir = rest.taskDir ?? (await prepareFork({ trajectoryPath, step }, rest.cwd)).source.header.task.dir;
  return runTask({ ...rest, taskDir, forkFrom: { trajectoryPath, step } });
}
