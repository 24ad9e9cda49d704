import { resolve } from 'node:path';
import { TbrlError, errorMessage } from '../../errors';
import type { Sandbox, SandboxProvider } from '../../sandbox/types';
import { DockerSandboxProvider } from '../../sandbox/provider';
import { ImageMissingError } from '../../sandbox/errors';
import { createTracedSandbox } from '../../trace/traced-sandbox';
import { TrajectoryWriter } from '../../trajectory/writer';
import { readTrajectory } from '../../trajectory/reader';
import { originalImageOf } from '../../attribution/originals';
import { rewardHooksFor } from '../../reward/hooks';
import { createTaskSandbox, installSolution } from '../task-sandbox';
import { restoreShellState, type PreparedFork } from '../fork';
import type { RunContext, RunPhase } from '../context';

/**
 * Phase 2, sandbox: the container (the task's image, a devcontainer, or a fork's checkpoint with
 * its shell state), the oracle's /solution, tracing (best effort), the reward hooks, the header's
 * sandbox fields; then the trajectory file is created with the header and any copied fork steps.
 */
export const sandboxPhase: RunPhase = {
  name: 'sandbox',
  async run(ctx: RunContext): Promise<void> {
    const { options, task, fork } = ctx;
    ctx.progress({ type: 'phase', message: `Starting the sandbox (${options.sandboxImage?.kind === 'devcontainer' ? `devcontainer of ${options.sandboxImage.workspaceFolder}` : 'image' in task.environment ? task.environment.image : `building ${task.environment.dockerfile}`})` });
    const provider = (ctx.provider = options.sandboxProvider ?? new DockerSandboxProvider());
    const onProgress = (line: string): void => ctx.progress({ type: 'build', line });
    const inner = (ctx.inner = fork
      ? await forkSandbox(provider, fork, { runId: ctx.runId, network: task.allowInternet, onProgress, signal: options.signal })
      : await createTaskSandbox(task, { provider, runId: ctx.runId, image: options.sandboxImage, hostEnv: ctx.env, onProgress, signal: options.signal }));
    // Harbor's oracle finds its solution/ at /solution; a model's run never does.
    if (!fork && ctx.header.policy.kind === 'oracle') await installSolution(task, inner, ctx.env);
    // Tracing is best effort: when the helper cannot start, the run goes on untraced and the header says why.
    let sandbox: Sandbox;
    try {
      sandbox = ctx.sandbox = await createTracedSandbox(inner, { enabled: options.trace !== false });
    } catch (err) {
      sandbox = ctx.sandbox = inner;
      ctx.warn(`Tracing could not be set up: ${errorMessage(err)}`);
    }
    if (fork) await restoreShellState(sandbox, fork.checkpoint);
    // Tev tasks carry a progress contract: Φ per step and PPRS on the final reward. A no-op otherwise.
    ctx.rewardHooks = rewardHooksFor({ sandbox, task, onError: ctx.warn });
    const info = sandbox.info;
    // A fork's container comes from a checkpoint; its files' originals are the root run's image's.
    const originalImage = fork
      ? await originalImageOf(fork.source.header, async (p) => (await readTrajectory(resolve(ctx.cwd, p))).header)
      : await sandbox.originalImage();
    ctx.header.sandbox = {
      image: info.image,
      ...(info.substitutedFrom ? { substitutedFrom: info.substitutedFrom } : {}),
      ...(info.workspaceMode ? { workspaceMode: info.workspaceMode } : {}),
      tracing: info.tracing,
      ...(info.cage ? { cage: info.cage } : {}),
      ...(originalImage ? { originalImage } : {}),
    };
    if (info.entrypointNote) ctx.warn(info.entrypointNote);
    if (info.cage && (info.cage.by === 'setpriv' || info.cage.by === 'none')) ctx.warn(`Containment is weaker: ${info.cage.note ?? `the agent's commands are caged by ${info.cage.by}`}.`);
    if (!info.tracing.available) ctx.warn(`Tracing is off (${info.tracing.reason ?? 'unavailable'}): DepGPO will fall back to f_t = 1.`);
    const writer = (ctx.writer = TrajectoryWriter.create(ctx.trajectoryPath, ctx.header));
    for (const s of fork?.copied ?? []) {
      writer.appendStep(s);
      ctx.steps.push(s);
    }
  },
};

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
