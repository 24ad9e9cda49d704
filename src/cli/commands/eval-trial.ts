import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { runTrial, type TrialRunOptions, type TrialSpec } from '../../core/eval/trial';
import { writeJsonAtomic, type JobRunConfig } from '../../core/eval/job';
import { DockerSandboxProvider } from '../../core/sandbox/provider';
import { EvalSandboxPool } from '../../core/eval/warm-pool';
import { holdSharedReaders } from '../../core/sandbox/shared-readers';
import { reapProcessSandboxes } from '../../core/sandbox/gc';
import { errorMessage } from '../../core/errors';
import { TRIAL_DONE_PREFIX } from '../../core/eval/ray-driver';


type NodeTrialSpec = TrialSpec & { run: JobRunConfig; node?: string };

/**
 * One trial from its spec file into spec.dir; 0 when recorded, 130 when interrupted. No exports here:
 * the client writes the ones its job asks for (run-job.ts), as for a local trial.
 */
async function runSpec(path: string, shared: TrialRunOptions, signal: AbortSignal): Promise<number> {
  const spec = JSON.parse(readFileSync(path, 'utf8')) as NodeTrialSpec;
  const record = await runTrial(spec, spec.run, shared, signal, spec.node ?? 'ray');
  if (!record) return 130;
  writeJsonAtomic(join(spec.dir, 'trial.json'), record);
  return 0;
}

/** One trial of an eval job on a cluster node: what `tbrl eval --ray`'s Ray tasks run. Internal. */
export const evalTrialCommand: CliCommand = {
  name: 'eval-trial',
  // Not for people: `tbrl eval --ray` runs it on the nodes; `tbrl eval-trial --help` still explains it.
  hidden: true,
  summary: 'Run one trial of an eval job from a spec file (used by `tbrl eval --ray` on cluster nodes)',
  usage: [
    'eval-trial <spec.json>   (spec: { trial, attempt, retries, task, run, dir, node })',
    'eval-trial --serve [--slots N]   spec paths on stdin, one a line, run as they come (N at once, the',
    '                         node\'s docker slots, bound the deferred removals); after each trial a',
    '                         `TBRL_TRIAL_DONE {"path":...,"rc":N}` line. One such process per node serves all its',
    '                         trials: one node start, one Docker provider, one set of volume checks and readers.',
    'eval-trial --reap PID SINCE   waits for its stdin to close (PID, a --serve process, holds the other end),',
    '                         then removes the containers PID created since SINCE (epoch seconds).',
  ].join('\n'),
  options: { serve: { type: 'boolean' }, slots: { type: 'string' }, reap: { type: 'string' } },
  async run({ positionals, values }) {
    if (values.reap !== undefined) return reap(Number(values.reap), Number(positionals[0]));
    const controller = new AbortController();
    if (!values.serve) {
      if (positionals.length !== 1) throw new UsageError('expected one spec file');
      process.on('SIGTERM', () => controller.abort('interrupted'));
      return runSpec(positionals[0], { sandboxProvider: new DockerSandboxProvider() }, controller.signal);
    }
    // What a local job shares between its trials, kept for all the trials of this node: the reader
    // containers of each image (trace baseline, originals) and the removal of a finished trial's
    // containers in the background. When its job ends Ray kills the node's actor, which may leave this
    // process no time to remove what it keeps: the reaper, a process of its own session that outlives
    // it, removes them once it is gone.
    const slots = values.slots === undefined ? 1 : Number(values.slots);
    if (!Number.isInteger(slots) || slots < 1) throw new UsageError(`--slots expects a whole number ≥ 1 (the trials this node runs at once), not ${String(values.slots)}`);
    startReaper();
    const pool = new EvalSandboxPool(new DockerSandboxProvider(), { lookahead: 0, maxPendingRemovals: Math.max(2, slots), runLabel: `eval-trial-${process.pid}` });
    const shared: TrialRunOptions = { sandboxProvider: pool, deferClose: pool.deferClose };
    const releaseReaders = holdSharedReaders();
    let ending: Promise<void> | undefined;
    const end = (): Promise<void> => (ending ??= pool.close().then(releaseReaders));
    const running = new Set<Promise<unknown>>();
    // SIGTERM: the node's actor died (PR_SET_PDEATHSIG); stop the trials, remove the containers, then exit.
    process.on('SIGTERM', () => {
      controller.abort('interrupted');
      void Promise.allSettled([...running]).finally(() => end().finally(() => process.exit(130)));
    });
    // Trials run as their lines arrive (the actor sends at most its slots at once); each answer names its spec.
    for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      const path = line.trim();
      if (!path) continue;
      if (controller.signal.aborted) break;
      const ran: Promise<void> = runSpec(path, shared, controller.signal).then(
        (rc) => ({ path, rc }),
        (err: unknown) => ({ path, rc: 1, error: errorMessage(err).slice(-2000) }),
      ).then((answer) => {
        process.stdout.write(`${TRIAL_DONE_PREFIX}${JSON.stringify(answer)}\n`);
      }).finally(() => running.delete(ran));
      running.add(ran);
    }
    // stdin closed: the actor is done with this process.
    await Promise.allSettled([...running]);
    await end();
    return controller.signal.aborted ? 130 : 0;
  },
};

/** The reaper of this --serve process: it holds the reaper's stdin open until it exits, however it exits. */
function startReaper(): void {
  const since = Math.floor(Date.now() / 1000);
  const reaper = spawn(process.execPath, [process.argv[1], 'eval-trial', '--reap', String(process.pid), String(since)], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  reaper.on('error', () => undefined);
  reaper.stdin?.on('error', () => undefined);
  reaper.unref();
  (reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
}

async function reap(pid: number, since: number): Promise<number> {
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isFinite(since)) throw new UsageError('expected --reap PID SINCE');
  // Its own session already (detached); a signal to the --serve process's group does not reach it.
  await new Promise<void>((resolve) => {
    process.stdin.on('data', () => undefined);
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.on('error', () => resolve());
  });
  await reapProcessSandboxes(new DockerSandboxProvider().connection, pid, since);
  return 0;
}
