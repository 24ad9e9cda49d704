import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { ExecResult } from './types';
import { CappedOutput } from './output-cap';
import { DockerDemuxer } from './demux';
import { ansiCQuote } from './bash-quote';
import { KILL_SCRIPT } from './kill-script';

/** Starts `bash` in the container with stdin attached: the raw multiplexed stream and a way to read its exit code. */
export type ShellSpawner = (workdir: string | undefined) => Promise<{ stream: Duplex; exitCode: () => Promise<number | null> }>;
/** Runs a helper program by a separate `docker exec` (used to kill timed-out commands). */
export type AuxRunner = (argv: string[]) => Promise<{ exitCode: number | null; stdout: Buffer }>;

/**
 * The AuxRunner for a container: a separate `docker exec` of argv (never through the persistent
 * shell, which may be the thing that is stuck), stdout collected, stderr dropped.
 */
export function containerAuxRunner(container: Docker.Container): AuxRunner {
  return async (argv) => {
    const exec = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true, Tty: false });
    const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
    const out: Buffer[] = [];
    const demux = new DockerDemuxer((kind, payload) => { if (kind === 'stdout') out.push(Buffer.from(payload)); });
    stream.on('data', (c: Buffer) => demux.push(c));
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    const inspected = await exec.inspect().catch(() => undefined);
    return { exitCode: inspected?.ExitCode ?? null, stdout: Buffer.concat(out) };
  };
}

export interface ShellRunOptions {
  timeoutMs?: number;
  maxOutputBytes: number;
  background?: boolean;
}

/** The shell did not answer its own start-up/state command (a container too starved to run bash). */
export class ShellUnresponsiveError extends Error {
  constructor(readonly partialOutput: string) {
    super('persistent shell did not answer');
  }
}

/** Raised to the caller when the shell's stream ends while a command runs; the sandbox explains why. */
export class ShellEndedError extends Error {
  constructor(
    readonly partialOutput: string,
    readonly exitCode: () => Promise<number | null>,
  ) {
    super('persistent shell ended');
  }
}

// Defined once in the shell: the state dump for checkpoints (it carries no secret).
const PRELUDE = [
  'set -m',
  '__tbrl_state() { builtin printf \'%s\\0\' "$PWD"; local __n; for __n in $(compgen -e); do builtin printf \'%s=%s\\0\' "$__n" "${!__n}"; done; }',
  '',
].join('\n');

/**
 * The line that runs one command. The command reaches the shell as an ANSI-C quoted argument to
 * `eval`, so no quoting in it can unbalance the line; stdin is /dev/null so it cannot eat the
 * shell's own input; `&& ... ||` keeps a `set -e` typed by the agent from killing the shell;
 * `builtin` keeps a user function named printf/eval from breaking the frame.
 *
 * The frame nonce is a literal in the final printf only: never a function argument (BASH_ARGV
 * with extdebug, `$1`), a variable (`set`, `declare`), the environment or a command line in
 * /proc, and it is consumed from stdin before the command starts. What the agent can switch on to
 * watch the shell's own commands (a DEBUG/RETURN trap, extdebug, functrace, history) is switched
 * off after the command and before the printf runs.
 *
 * Before the command: a working directory deleted since the last command (`rmdir` of the cwd)
 * is replaced by the shell's home directory, with a note in the output.
 */
export function framedLine(nonce: string, command: string, home: string, background?: { log: string }): string {
  const recover = [
    'builtin [ "$PWD" -ef . ] 2>/dev/null || builtin cd -- "$PWD" 2>/dev/null || {',
    `__tbrl_gone=$PWD; builtin cd -- ${ansiCQuote(home)} 2>/dev/null || builtin cd /;`,
    "builtin printf '[note: the working directory %s no longer exists; the command runs in %s]\\n' \"$__tbrl_gone\" \"$PWD\"; }",
  ].join(' ');
  const unwatch = 'builtin shopt -u extdebug; builtin trap - DEBUG RETURN; builtin set +o history +o functrace';
  if (background) {
    return `${recover}\n{ builtin eval ${ansiCQuote(command)}\n} </dev/null >${ansiCQuote(background.log)} 2>&1 & __tbrl_pid=$!; ${unwatch}; builtin printf '\\n__TBRL_${nonce}__ 0 %s %s\\n' "$__tbrl_pid" "$PWD"`;
  }
  return `${recover}\n{ builtin eval ${ansiCQuote(command)}\n} </dev/null 2>&1 && __tbrl_rc=0 || __tbrl_rc=$?; ${unwatch}; builtin printf '\\n__TBRL_${nonce}__ %s - %s\\n' "$__tbrl_rc" "$PWD"`;
}

const STRAY_LIMIT = 64 * 1024;

/** A reason from outside (e.g. the disk watchdog) to end the running command, and what its result says. */
export interface StopRequest {
  /** Appended to the command's output, e.g. `[stopped: ...]`. */
  note: string;
  /** Extra fields on the command's ExecResult (e.g. `diskLimitExceeded`). */
  fields: Partial<ExecResult>;
}

interface Pending {
  nonce: string;
  marker: Buffer;
  output: CappedOutput;
  carry: Buffer;
  resolve: (r: { exitCode: number; pid?: number; cwd: string }) => void;
  reject: (e: Error) => void;
}

/**
 * One long-lived bash per container. Commands run one at a time in the same shell process, so
 * `cd` and `export` persist exactly as in a terminal; each is framed by a per-command nonce.
 */
export class PersistentShell {
  private stream?: Duplex;
  private pending?: Pending;
  private stray: Buffer[] = [];
  private strayBytes = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private shellPid = 0;
  private alive = false;
  private closed = false;
  /** Set while a command runs: ends its wait with a stop request. */
  private stopCurrent?: (request: StopRequest) => Promise<void>;
  /** The image user's ids (files written through the archive API get them). */
  uid = 0;
  gid = 0;
  /** Last cwd reported by the shell: a respawned shell starts there. */
  cwd: string | undefined;
  /** Set when the shell had to be restarted (the exported environment of the old one is gone). */
  restarts = 0;
  /** The directory a new shell starts in and a deleted cwd falls back to (the task's workdir). */
  readonly home: string;
  /** Said once, at the head of the next command's output (why the shell or its cwd changed). */
  private note = '';
  private everStarted = false;

  constructor(
    private readonly spawn: ShellSpawner,
    private readonly aux: AuxRunner,
    initialCwd?: string,
  ) {
    this.cwd = initialCwd;
    this.home = initialCwd ?? '/';
  }

  get pid(): number {
    return this.shellPid;
  }

  /** Starts the shell (idempotent); later calls respawn it if the previous one exited. */
  async ensureStarted(): Promise<void> {
    if (this.alive) return;
    // A respawn starts in the home directory (the last cwd may be deleted: Docker cannot start an
    // exec there) and then goes back to the last cwd when it still exists.
    const back = this.everStarted && this.cwd !== undefined && this.cwd !== this.home ? this.cwd : undefined;
    try {
      await this.startIn(this.everStarted ? this.home : this.cwd);
    } catch (err) {
      if (!(err instanceof ShellEndedError) || this.closed) throw err;
      // The start directory itself is gone (the agent removed the workdir): start at /.
      const missing = this.everStarted ? this.home : this.cwd;
      await this.startIn('/');
      this.note += `[note: ${missing ?? 'the working directory'} no longer exists; the shell started in /]\n`;
      this.cwd = '/';
      return;
    }
    this.everStarted = true;
    if (back) {
      const r = await this.frame(`builtin cd -- ${ansiCQuote(back)}`, 10_000);
      if (r.exitCode !== 0) this.note += `[note: the previous working directory ${back} no longer exists; the new shell is in ${this.home}]\n`;
      else this.cwd = back;
    }
  }

  private async startIn(dir: string | undefined): Promise<void> {
    const { stream, exitCode } = await this.spawn(dir);
    this.stream = stream;
    this.alive = true;
    const demux = new DockerDemuxer((kind, payload) => this.onOutput(kind, payload));
    stream.on('data', (chunk: Buffer) => demux.push(chunk));
    const ended = () => {
      if (this.stream !== stream) return;
      this.alive = false;
      const p = this.pending;
      this.pending = undefined;
      p?.reject(new ShellEndedError(p.output.text(), exitCode));
    };
    stream.on('end', ended);
    stream.on('close', ended);
    stream.on('error', ended);
    stream.write(PRELUDE);
    const r = await this.frame('builtin echo -n "$$ $EUID ${GROUPS[0]}"', 10_000);
    this.everStarted = true;
    const [pid, uid, gid] = r.output.text().trim().split(' ').map(Number);
    this.shellPid = pid;
    this.uid = uid || 0;
    this.gid = gid || 0;
  }

  /** Serialises commands: the shell is one terminal. */
  run(command: string, options: ShellRunOptions): Promise<ExecResult> {
    const job = this.queue.then(() => this.runNow(command, options));
    this.queue = job.catch(() => undefined);
    return job;
  }

  /** cwd and exported environment, for checkpoints. */
  state(): Promise<{ cwd: string; env: Record<string, string> }> {
    const job = this.queue.then(async () => {
      await this.ensureStarted();
      const r = await this.frame('__tbrl_state', 30_000, 64 * 1024 * 1024);
      const parts = r.raw.toString('utf8').split('\0');
      const cwd = parts[0];
      const env: Record<string, string> = {};
      for (const kv of parts.slice(1)) {
        const eq = kv.indexOf('=');
        if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
      return { cwd, env };
    });
    this.queue = job.catch(() => undefined);
    return job;
  }

  /**
   * Stops the running command from outside: kills every process but the shell (the command's tree
   * and background jobs alike) and ends the command with `request` in its result. Returns false when
   * no command is running; the caller then kills with `killAllButShell` and reports it itself.
   * Resolves after the kill.
   */
  async requestStop(request: StopRequest): Promise<boolean> {
    if (!this.stopCurrent) return false;
    // Resolves once the kill is done, so the caller measures what the dead writers left.
    await this.stopCurrent(request);
    return true;
  }

  /** Kills every process in the container except init, its entrypoint and this shell. */
  async killAllButShell(): Promise<void> {
    try {
      await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'allbut', String(this.shellPid)]);
    } catch {
      // Best effort, as for timeouts: a stuck command is handled by the shell restart in frame().
    }
  }

  close(): void {
    this.closed = true;
    this.alive = false;
    this.stream?.destroy();
  }

  private async runNow(command: string, options: ShellRunOptions): Promise<ExecResult> {
    if (this.closed) throw new Error('sandbox is closed');
    await this.ensureStarted();
    const started = Date.now();
    if (options.background) {
      const log = `/tmp/tbrl-bg-${randomBytes(4).toString('hex')}.log`;
      const r = await this.frame({ command, background: { log } }, 10_000, options.maxOutputBytes, true);
      const out = `${this.takeNote()}${r.output.text()}[started in background: pid ${r.pid}, output in ${log}]\n`;
      return { exitCode: 0, output: out, droppedBytes: 0, timedOut: false, durationMs: Date.now() - started };
    }
    const note = this.takeNote();
    const r = await this.frame({ command }, options.timeoutMs, options.maxOutputBytes, true);
    const restartNote = r.restarted ? '; the shell was restarted, exported variables were reset' : '';
    let output = note + r.output.text();
    if (r.timedOut) output += `\n[killed after ${options.timeoutMs} ms timeout${restartNote}]\n`;
    else if (r.stopped) output += `\n${r.stopped.note.replace(/\]$/, `${restartNote}]`)}\n`;
    return {
      exitCode: r.timedOut ? null : r.exitCode,
      output,
      droppedBytes: r.output.droppedBytes,
      timedOut: r.timedOut,
      durationMs: Date.now() - started,
      ...r.stopped?.fields,
    };
  }

  private takeNote(): string {
    const note = this.note;
    this.note = '';
    return note;
  }

  /**
   * Sends one framed line and waits for its sentinel: an agent command (`wrapped`) or a raw
   * command for internal use.
   */
  private async frame(
    line: string | { command: string; background?: { log: string } },
    timeoutMs: number | undefined,
    maxOutputBytes = 1024 * 1024,
    wrapped = false,
  ): Promise<{ exitCode: number; pid?: number; output: CappedOutput; raw: Buffer; timedOut: boolean; restarted: boolean; stopped?: StopRequest }> {
    const nonce = randomBytes(12).toString('hex');
    const text = typeof line === 'string' ? framedLine(nonce, line, this.home) : framedLine(nonce, line.command, this.home, line.background);
    const output = new CappedOutput(maxOutputBytes);
    let rawCollector: Buffer[] | undefined;
    if (!wrapped) {
      rawCollector = [];
      const push = output.push.bind(output);
      output.push = (b: Buffer) => {
        rawCollector!.push(Buffer.from(b));
        push(b);
      };
    }
    const done = new Promise<{ exitCode: number; pid?: number; cwd: string }>((resolve, reject) => {
      this.pending = { nonce, marker: Buffer.from(`\n__TBRL_${nonce}__ `), output, carry: Buffer.alloc(0), resolve, reject };
    });
    // A timed-out command whose shell was restarted rejects later; nobody awaits it any more.
    done.catch(() => undefined);
    // Output printed by background jobs between commands shows up with the next command, as in a terminal.
    const stray = this.stray;
    this.stray = [];
    this.strayBytes = 0;
    for (const b of stray) this.onOutput('stdout', b);
    const sentAt = Date.now();
    this.stream!.write(`${text}\n`);

    let timer: NodeJS.Timeout | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let restarted = false;
    let stopped: StopRequest | undefined;
    // The command ends by itself, by its timeout, or by a stop request from outside (disk watchdog);
    // the last two share the kill-then-restart-if-stuck path below.
    const interrupts: Promise<Awaited<typeof done> | 'timeout' | 'stop'>[] = [done];
    if (timeoutMs && timeoutMs > 0) interrupts.push(new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs); }));
    let killedAfterStop: (() => void) | undefined;
    if (wrapped) {
      interrupts.push(new Promise<'stop'>((resolve) => {
        this.stopCurrent = (request) => new Promise<void>((killed) => {
          stopped = request;
          killedAfterStop = killed;
          resolve('stop');
        });
      }));
    }
    try {
      let outcome: Awaited<typeof done> | 'timeout' | 'stop' | 'stuck' = await (interrupts.length > 1 ? Promise.race(interrupts) : done);
      this.stopCurrent = undefined;
      if (outcome === 'timeout' && !wrapped) {
        // Our own framing (start-up, state capture) did not answer: restarting would loop, so give up.
        this.alive = false;
        this.stream?.destroy();
        throw new ShellUnresponsiveError(output.text());
      }
      if (outcome === 'timeout' || outcome === 'stop') {
        if (outcome === 'timeout') {
          timedOut = true;
          await this.killCommand(sentAt);
        } else {
          await this.killAllButShell();
          killedAfterStop?.();
        }
        const grace = new Promise<'stuck'>((resolve) => { graceTimer = setTimeout(() => resolve('stuck'), 3000); });
        outcome = await Promise.race([done, grace]);
        if (outcome === 'stuck') {
          // The command is a shell builtin loop (nothing to kill but the shell itself): restart the shell.
          restarted = true;
          await this.restart();
          outcome = { exitCode: 137, cwd: this.cwd ?? '/' };
        }
      }
      const r = outcome as { exitCode: number; pid?: number; cwd: string };
      this.cwd = r.cwd || this.cwd;
      return { exitCode: r.exitCode, pid: r.pid, output, raw: rawCollector ? Buffer.concat(rawCollector) : Buffer.alloc(0), timedOut, restarted, stopped };
    } finally {
      this.stopCurrent = undefined;
      killedAfterStop?.();
      clearTimeout(timer);
      clearTimeout(graceTimer);
    }
  }

  private async killCommand(sentAt: number): Promise<void> {
    try {
      const up = await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'uptime']);
      // Measured after the uptime answer, so the window reaches back at least to the command's start.
      const elapsedMs = Date.now() - sentAt;
      const nowTicks = Number(up.stdout.toString().trim());
      // 100 ticks/s on Linux; the slack covers tick rounding between write() and fork().
      const minTicks = Math.max(0, nowTicks - Math.ceil(elapsedMs / 10) - 5);
      await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'children', String(this.shellPid), String(minTicks)]);
    } catch {
      // Killing is best effort (a fork bomb may leave no pid to exec with); the shell restart below still applies.
    }
  }

  private async restart(): Promise<void> {
    const old = this.stream;
    const oldPid = this.shellPid;
    const p = this.pending;
    this.pending = undefined;
    this.alive = false;
    this.stream = undefined;
    old?.destroy();
    try {
      if (oldPid) await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'tree', String(oldPid)]);
    } catch {
      /* best effort */
    }
    p?.reject(new Error('restarted'));
    this.restarts++;
    await this.ensureStarted();
  }

  /** Background output between commands; only the latest bytes are kept so a chatty job cannot grow memory. */
  private pushStray(payload: Buffer): void {
    this.stray.push(Buffer.from(payload));
    this.strayBytes += payload.length;
    while (this.strayBytes > STRAY_LIMIT && this.stray.length > 1) this.strayBytes -= this.stray.shift()!.length;
  }

  private onOutput(kind: 'stdout' | 'stderr', payload: Buffer): void {
    const p = this.pending;
    if (!p) {
      this.pushStray(payload);
      return;
    }
    if (kind === 'stderr') {
      // Only the shell's own diagnostics arrive here (commands run with 2>&1); keep them visible.
      p.output.push(payload);
      return;
    }
    const buf = p.carry.length ? Buffer.concat([p.carry, payload]) : payload;
    const at = buf.indexOf(p.marker);
    if (at < 0) {
      const keep = Math.min(buf.length, p.marker.length - 1);
      p.output.push(buf.subarray(0, buf.length - keep));
      p.carry = Buffer.from(buf.subarray(buf.length - keep));
      return;
    }
    p.output.push(buf.subarray(0, at));
    const rest = buf.subarray(at + p.marker.length);
    const nl = rest.indexOf(0x0a);
    if (nl < 0) {
      p.carry = Buffer.from(buf.subarray(at));
      return;
    }
    const fields = rest.subarray(0, nl).toString('utf8');
    const sp1 = fields.indexOf(' ');
    const sp2 = fields.indexOf(' ', sp1 + 1);
    const exitCode = Number(fields.slice(0, sp1));
    const pidField = fields.slice(sp1 + 1, sp2);
    const cwd = fields.slice(sp2 + 1);
    const after = rest.subarray(nl + 1);
    if (after.length) this.pushStray(after);
    this.pending = undefined;
    p.resolve({ exitCode, pid: pidField === '-' ? undefined : Number(pidField), cwd });
  }
}
