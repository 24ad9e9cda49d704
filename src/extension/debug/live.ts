import { basename, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runTask } from '../../core/run/run-task';
import type { BeforeExecuteDecision, PendingTurn } from '../../core/agent/loop';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../core/trajectory/schema';
import { stepObservation } from '../../core/trajectory/observation';
import { appendLabels, humanLabels, type HumanChoice } from '../../core/verifier/labels';
import { errorMessage } from '../../core/errors';
import type { LaunchArgs } from './launch-args';

export type HumanDecision =
  | { action: 'accept'; stopAfter?: boolean; candidate?: undefined; text?: undefined }
  | { action: 'pick'; candidate?: number; stopAfter?: boolean; text?: undefined }
  | { action: 'edit'; text?: string; stopAfter?: boolean; candidate?: undefined }
  | { action: 'stop'; stopAfter?: boolean; candidate?: undefined; text?: undefined };

export interface LiveHooks {
  output(text: string): void;
  onHeader(h: TrajectoryHeader): void;
  onStep(s: StepRecord): void;
  beforeExecute(step: number, turn: PendingTurn): Promise<BeforeExecuteDecision>;
  onEnd(footer: TrajectoryFooter | undefined, trajectoryPath: string | undefined): void;
  onError(message: string): void;
}

export interface LiveRun {
  readonly outDir: string;
  readonly trajectoryPath: string;
  readonly labelsPath: string;
  cancel(): void;
  /** Human choices become preference labels next to the trajectory (labels.jsonl). */
  recordDecision(step: number, turn: PendingTurn, d: HumanDecision, history: StepRecord[]): Promise<number>;
}

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

/** A live run of the agent through the core orchestrator, with the debugger in its beforeExecute hook. */
export function startLiveRun(args: LaunchArgs, hooks: LiveHooks): LiveRun {
  const cwd = args.cwd ?? process.cwd();
  const taskDir = resolve(cwd, args.task!);
  const runsDir = resolve(cwd, args.runsDir ?? 'runs');
  const outDir = join(runsDir, `${basename(taskDir)}-${stamp()}-${randomBytes(2).toString('hex')}`);
  const abort = new AbortController();
  let instruction = '';
  let header: TrajectoryHeader | undefined;
  const run: LiveRun = {
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
    policy: args.policy,
    baseUrl: args.baseUrl,
    model: args.model,
    apiKey: args.apiKey,
    n: args.n,
    verifier: args.verifier,
    maxSteps: args.maxSteps,
    maxTimeSec: args.maxTimeSec,
    checkpoint: args.checkpoint,
    trace: args.trace,
    skipReward: args.skipReward,
    signal: abort.signal,
    beforeExecute: hooks.beforeExecute,
    onProgress: (e) => {
      if (e.type === 'step') hooks.onStep(e.step);
      else if (e.type === 'info' || e.type === 'phase' || e.type === 'warning') hooks.output(e.type === 'warning' ? `warning: ${e.message}` : e.message);
      else if (e.type === 'build') hooks.output(e.line);
    },
  }).then(
    (result) => {
      header = result.header;
      instruction = result.header.task.instruction;
      hooks.onHeader(result.header);
      hooks.onEnd(result.footer, result.trajectoryPath);
    },
    (err) => hooks.onError(errorMessage(err)),
  );
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
