import * as vscode from 'vscode';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { outcomeCounts } from '../../core/eval/view-model';
import type { EvalEvent } from '../../core/eval/run-job';

function duration(sec: number): string {
  return sec < 60 ? `${Math.round(sec)}s` : `${Math.floor(sec / 60)}m${String(Math.round(sec % 60)).padStart(2, '0')}s`;
}

/** The notification's line for a `progress` event: counts by class, running trials, ETA. */
export function progressMessage(e: Extract<EvalEvent, { type: 'progress' }>): string {
  return `${e.done}/${e.total} · ${outcomeCounts(e.outcomes) || 'no trial done yet'} · ${e.running} running · ETA ${e.etaSec === null ? '?' : duration(e.etaSec)}`;
}

/**
 * `tbrl eval … --json` as child processes of the extension host, one per job directory. Cancelling
 * sends SIGINT, which the CLI turns into an orderly stop: completed trials stay on disk and the job
 * stays resumable. The bundled CLI (dist/extension-cli.js) runs on the host's own Node.
 */
export class EvalRunner implements vscode.Disposable {
  private readonly running = new Map<string, ChildProcess>();
  /** Trials started and not yet ended, per job, from the CLI's trial-start / trial-end events. */
  private readonly trials = new Map<string, Set<string>>();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly extensionPath: string, private readonly output: vscode.LogOutputChannel) {}

  isRunning(jobDir: string): boolean {
    return this.running.has(jobDir);
  }

  /** How many trials of a job this editor runs are in flight now; undefined for other jobs. */
  runningTrials(jobDir: string): number | undefined {
    return this.running.has(jobDir) ? this.trials.get(jobDir)?.size ?? 0 : undefined;
  }

  get runningJobs(): string[] {
    return [...this.running.keys()];
  }

  cancel(jobDir: string): boolean {
    const child = this.running.get(jobDir);
    if (!child) return false;
    this.output.info(`[eval] interrupting ${jobDir} (SIGINT: the job stays resumable)`);
    child.kill('SIGINT');
    return true;
  }

  /** Runs `tbrl eval <args> --json` for `jobDir` under a cancellable progress notification; resolves with the exit code. */
  run(args: string[], jobDir: string, cwd: string, title: string, env: Record<string, string> = {}): Promise<number | null> {
    if (this.running.has(jobDir)) {
      void vscode.window.showWarningMessage(`${jobDir} is already running.`);
      return Promise.resolve(null);
    }
    const cli = join(this.extensionPath, 'dist', 'extension-cli.js');
    const argv = [cli, 'eval', ...args, '--json'];
    this.output.info(`[eval] ${process.execPath} ${argv.join(' ')} (in ${cwd})`);
    const child = spawn(process.execPath, argv, { cwd, env: { ...process.env, ...env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.running.set(jobDir, child);
    this.changed.fire();
    return Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, cancel) => new Promise<number | null>((resolve) => {
      cancel.onCancellationRequested(() => this.cancel(jobDir));
      let buffered = '';
      let done = 0;
      const inFlight = new Set<string>();
      this.trials.set(jobDir, inFlight);
      let lastError = '';
      child.stdout?.setEncoding('utf8').on('data', (text: string) => {
        buffered += text;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          let e: EvalEvent;
          try {
            e = JSON.parse(line) as EvalEvent;
          } catch {
            this.output.info(`[eval] ${line}`);
            continue;
          }
          if (e.type === 'progress') {
            progress.report({ message: progressMessage(e), increment: e.total ? (100 * (e.done - done)) / e.total : undefined });
            done = e.done;
          } else if (e.type === 'job-start') {
            progress.report({ message: `${e.toRun} of ${e.trials} trials to run${e.alreadyDone ? `, ${e.alreadyDone} already done` : ''}` });
            done = e.alreadyDone;
          } else if (e.type === 'trial-start') {
            inFlight.add(e.trial);
            this.changed.fire();
          } else if (e.type === 'trial-end') {
            inFlight.delete(e.trial);
            this.changed.fire();
            this.output.info(`[eval] ${e.trial}: ${e.record.outcome.class}${e.record.reward !== undefined ? ` (reward ${e.record.reward.toFixed(3)})` : ''}${e.willRetry ? ' → retrying' : ''}`);
          }
        }
      });
      child.stderr?.setEncoding('utf8').on('data', (text: string) => {
        for (const line of text.split('\n').filter(Boolean)) {
          lastError = line;
          this.output.info(`[eval] ${line}`);
        }
      });
      const finish = (code: number | null, problem?: string): void => {
        if (this.running.get(jobDir) !== child) return;
        this.running.delete(jobDir);
        this.trials.delete(jobDir);
        this.changed.fire();
        if (problem) void vscode.window.showErrorMessage(`Evaluation could not start: ${problem}`);
        else if (code === 0) void vscode.window.showInformationMessage(`Evaluation finished: ${jobDir}`);
        else if (code === 130) void vscode.window.showInformationMessage(`Evaluation interrupted; completed trials are kept. "TBRL: Resume Eval Job" runs the rest of ${jobDir}.`);
        else void vscode.window.showErrorMessage(`Evaluation failed (exit ${code}): ${lastError || 'see the TBRL Studio output'}`);
        resolve(code);
      };
      child.on('error', (err) => finish(null, err.message));
      child.on('close', (code, signal) => finish(code ?? (signal === 'SIGINT' ? 130 : null)));
    })));
  }

  dispose(): void {
    for (const dir of this.running.keys()) this.cancel(dir);
    this.changed.dispose();
  }
}
