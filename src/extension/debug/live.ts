import { basename, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runTask } from '../../core/run/run-task';
import type { ForkSource } from '../../core/run/fork';
import { DockerSandboxProvider } from '../../core/sandbox/provider';
import { LABEL_RUN } from '../../core/sandbox/types';
import type { TrajectoryHeader } from '../../core/trajectory/schema';
import { stepObservation } from '../../core/trajectory/observation';
import { appendLabels, humanLabels, type HumanChoice } from '../../core/verifier/labels';
import { errorMessage } from '../../core/errors';
import { SERVER_PATH_ENV } from '../../core/serve/runtime';
import type { LaunchArgs } from './launch-args';
import type { LiveHooks, LiveRun } from '../../core/debug/runtime';

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

/**
 * A live run of the agent through the core orchestrator, with the debugger in its beforeExecute
 * hook; with `forkFrom` it starts from that step's checkpoint of an earlier run (restart frame).
 * Editor runs keep checkpoints unless `checkpoint: false`, so any step can be restarted.
 */
export function startLiveRun(args: LaunchArgs, hooks: LiveHooks, forkFrom?: ForkSource): LiveRun {
  const cwd = args.cwd ?? process.cwd();
  const taskDir = resolve(cwd, args.task!);
  const runsDir = resolve(cwd, args.runsDir ?? 'runs');
  const outDir = join(runsDir, `${basename(taskDir)}-${stamp()}-${randomBytes(2).toString('hex')}`);
  const abort = new AbortController();
  let instruction = '';
  let header: TrajectoryHeader | undefined;
  let settle!: () => void;
  const done = new Promise<void>((r) => (settle = r));
  const run: LiveRun = {
    done,
    outDir,
    trajectoryPath: join(outDir, 'trajectory.jsonl'),
    labelsPath: join(outDir, 'labels.jsonl'),
    cancel: () => abort.abort('cancelled'),
    async recordDecision(step, turn, d, history) {
      if (d.action === 'stop') return 0;
      const candidates = turn.policyTurn.candidates.map((c) => c.text);
      const choice: HumanChoice = d.action === 'edit' ? { action: 'edit', chosen: turn.policyTurn.chosen, editedText: d.text! } : { action: d.action, chosen: d.action === 'pick' ? d.candidate! : turn.policyTurn.chosen };
      const labels = humanLabels(
        { instruction, history: history.map((s) => ({ action: s.chosenText, observation: stepObservation(s) })), candidates, step, runId: header?.runId, taskId: header?.task.id },
        choice,
      );
      await appendLabels(run.labelsPath, labels);
      return labels.length;
    },
  };
  runTask({
    taskDir,
    outDir,
    cwd,
    // fillLaunchDefaults turned 'local' into 'model' without an endpoint.
    policy: args.policy === 'local' ? 'model' : args.policy,
    baseUrl: args.baseUrl,
    model: args.model,
    apiKey: args.apiKey,
    n: args.n,
    temperature: args.temperature,
    verifier: args.verifier,
    maxSteps: args.maxSteps,
    maxTimeSec: args.maxTimeSec,
    checkpoint: args.checkpoint ?? true,
    ...(forkFrom ? { forkFrom } : {}),
    trace: args.trace,
    skipReward: args.skipReward,
    allowPrivileges: args.allowPrivileges,
    ...(args.serverPath ? { env: { ...process.env, [SERVER_PATH_ENV]: args.serverPath } } : {}),
    signal: abort.signal,
    beforeExecute: hooks.beforeExecute,
    onProgress: (e) => {
      if (e.type === 'step') hooks.onStep(e.step);
      else if (e.type === 'info' || e.type === 'phase' || e.type === 'warning') hooks.output(e.type === 'warning' ? `warning: ${e.message}` : e.message);
      else if (e.type === 'build') hooks.output(e.line);
    },
  }).then(
    ({ result, error }) => {
      if (error) {
        // A failed run still made its sandbox (and maybe checkpoints) under this header.
        hooks.onHeader(result.header);
        hooks.onError(errorMessage(error));
        return;
      }
      header = result.header;
      instruction = result.header.task.instruction;
      hooks.onHeader(result.header);
      hooks.onEnd(result.footer, result.trajectoryPath);
    },
    (err) => hooks.onError(errorMessage(err)),
  ).finally(() => settle());
  // The header is on disk as soon as the sandbox is up; read it lazily for labels and the thread name.
  void (async () => {
    const { readFile } = await import('node:fs/promises');
    for (let i = 0; i < 600 && !header && !abort.signal.aborted; i++) {
      try {
        const first = (await readFile(run.trajectoryPath, 'utf8')).split('\n')[0];
        header = JSON.parse(first) as TrajectoryHeader;
        instruction = header.task.instruction;
        hooks.onHeader(header);
      } catch {
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();
  return run;
}

/**
 * Removes the checkpoint images of runs a debug session started, newest run first: a fork's
 * checkpoints are children of its source's, and Docker refuses to remove a parent before them.
 */
export async function removeRunCheckpoints(runIds: string[]): Promise<number> {
  const docker = new DockerSandboxProvider().docker;
  let removed = 0;
  for (const runId of [...runIds].reverse()) {
    const images = await docker.listImages({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, 'dev.tbrl.kind=checkpoint'] } });
    // Newest step first for the same reason within one run.
    images.sort((a, b) => b.Created - a.Created);
    for (const img of images) {
      await docker.getImage(img.Id).remove({ force: true }).then(() => removed++, () => undefined);
    }
  }
  return removed;
}
