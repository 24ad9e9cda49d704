import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { runTrial, type TrialRunOptions, type TrialSpec } from '../../core/eval/trial';
import { writeJsonAtomic, type JobRunConfig } from '../../core/eval/job';
import { writeTrialExports } from '../../core/eval/interop';
import { DockerSandboxProvider } from '../../core/sandbox/provider';
import { errorMessage } from '../../core/errors';
import { TRIAL_DONE_PREFIX } from '../../core/eval/ray-driver';


type NodeTrialSpec = TrialSpec & { run: JobRunConfig; node?: string };

/** One trial from its spec file into spec.dir; 0 when recorded, 130 when interrupted. */
async function runSpec(path: string, shared: TrialRunOptions, signal: AbortSignal): Promise<number> {
  const spec = JSON.parse(readFileSync(path, 'utf8')) as NodeTrialSpec;
  const record = await runTrial(spec, spec.run, shared, signal, spec.node ?? 'ray');
  if (!record) return 130;
  writeJsonAtomic(join(spec.dir, 'trial.json'), record);
  await writeTrialExports(spec.dir, { exportAtif: true });
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
    'eval-trial --serve       spec paths on stdin, one a line; after each trial a `TBRL_TRIAL_DONE {"rc":N}` line.',
    '                         A Ray worker keeps one such process for the trials it runs: no process start',
    '                         per trial, and one Docker provider for them all.',
  ].join('\n'),
  options: { serve: { type: 'boolean' } },
  async run({ positionals, values }) {
    const controller = new AbortController();
    const shared: TrialRunOptions = { sandboxProvider: new DockerSandboxProvider() };
    if (!values.serve) {
      if (positionals.length !== 1) throw new UsageError('expected one spec file');
      process.on('SIGTERM', () => controller.abort('interrupted'));
      return runSpec(positionals[0], shared, controller.signal);
    }
    // No hold on the reader containers here: when its job ends, Ray SIGKILLs a worker's child processes
    // (kill_child_processes_on_worker_exit), which would leave containers kept between trials behind.
    let busy: Promise<unknown> = Promise.resolve();
    // SIGTERM: the Ray worker died (PR_SET_PDEATHSIG); stop the trial (its containers are removed), then exit.
    process.on('SIGTERM', () => {
      controller.abort('interrupted');
      void busy.finally(() => process.exit(130));
    });
    for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      const path = line.trim();
      if (!path) continue;
      const ran = runSpec(path, shared, controller.signal).then(
        (rc) => ({ rc }),
        (err: unknown) => ({ rc: 1, error: errorMessage(err).slice(-2000) }),
      );
      busy = ran;
      process.stdout.write(`${TRIAL_DONE_PREFIX}${JSON.stringify(await ran)}\n`);
      if (controller.signal.aborted) break;
    }
    return controller.signal.aborted ? 130 : 0;
  },
};
