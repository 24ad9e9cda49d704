import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { connectDocker } from '../sandbox/docker-client';
import type { Checkpoint, ExecOptions, ExecResult, ImageRef, Sandbox, SandboxInfo } from '../sandbox/types';
import type { OriginalSource } from '../attribution/originals';
import { aggregate } from './aggregate';
import { StraceHelper, TracerUnavailable } from './helper';
import { FileHistory } from './file-history';
import { RotatingLog } from './rotating-log';
import { extractStdoutValues } from './stdout-values';
import { resolveWrites } from './writes';
import type { CommandTrace, VerifierTrace } from './types';
import { TraceWindows, type TraceWindow } from './windows';
import { BatchReader } from './batch-reader';
import { readThroughArchive, type FileContent } from './file-content';
import { ansiCQuote } from '../sandbox/bash-quote';
import { StraceShell } from './strace-shell';
import { TbrlError } from '../errors';

export interface TracedSandboxOptions {
  /** Docker client; defaults to DOCKER_HOST or /var/run/docker.sock like the sandbox. */
  docker?: Docker;
  /** Helper image with strace (default tbrl-standin/tracer:latest). */
  tracerImage?: string;
  /** Keep the raw strace output here (host path), rotated so it never exceeds `maxLogBytes`. */
  logPath?: string;
  maxLogBytes?: number;
  /** Events kept per command; beyond it the trace is marked incomplete. */
  maxEventsPerCommand?: number;
  /** Written files diffed per command; beyond it the rest are listed as not diffed. */
  maxFilesPerCommand?: number;
  /** How long to wait for a command's end marker to come through the trace stream. */
  endMarkTimeoutMs?: number;
  /** After a command that left processes running, follow them until quiet for quietMs (at most maxMs). */
  settle?: { quietMs: number; maxMs: number } | false;
  /**
   * Attach mode's trace lines through a host FIFO (the default there) or dockerd's exec stream (`false`; also the
   * automatic fallback). Shell mode needs none (its lines are strace's stderr): its helper has one only when `true`.
   */
  fifo?: boolean;
  /**
   * `shell` (default): a shell started under strace inside the task container (strace copied in
   * from the helper image), so --seccomp-bpf limits stops to the traced syscalls. `attach`: strace
   * in the helper attaches to the sandbox's own shell with -p (no seccomp: ~3x slower on
   * process-heavy commands, but nothing is copied into the container). Shell mode falls back to
   * attach when it cannot start.
   */
  mode?: 'shell' | 'attach';
  /** Output cap for the traced shell in shell mode (the sandbox's own cap is not visible here). */
  maxOutputBytes?: number;
  /** Off: pass everything through and report tracing as disabled. */
  enabled?: boolean;
}

export type TracingStatus = SandboxInfo['tracing'];

export interface TracedSandbox extends Sandbox {
  readonly tracing: TracingStatus;
  /**
   * Current content of container paths, one settled answer per path as `readThroughArchive` gives it
   * (its error included): while traced, all of them in one round trip through the helper's reader (an
   * archive read of a running container costs the daemon a few hundred ms each on a busy machine),
   * else one archive read each.
   */
  readFiles(paths: readonly string[]): Promise<PromiseSettledResult<FileContent>[]>;
  /** Runs the verifier (the test run) traced, returning what it inspected: DepGPO's E before removing its own writes. */
  traceVerifier(command: string, options?: ExecOptions): Promise<{ result: ExecResult; verifier?: VerifierTrace }>;
}

const METHOD = 'strace via helper container (--pid=container, SYS_PTRACE)';
const SHELL_METHOD = 'strace --seccomp-bpf as the parent of the shell (copied in from the helper image)';
const PID_TAG = '__TBRL_TRACE_PID__ ';
/** `trace.incomplete` of commands after the tracer died: DepGPO falls back with this reason (depgpo/compute.ts). */
export const TRACER_LOST = 'tracer lost';
/**
 * `trace.incomplete` of a command during which a process other than the frame shell opened a trace
 * marker (an agent closing its own window early, or opening one nobody reads): the markers are
 * ignored, the trace is whole, but the agent tried to hide syscalls, so DepGPO falls back naming it.
 */
export const FORGED_MARKER = 'forged trace marker';
/**
 * A lost tracer (killed, or stopped with SIGSTOP) is restarted with a new traced shell this many
 * times a sandbox, like the container after `kill -9 -1`; the next loss ends the run with a
 * TRACER_LOST error, since running the agent on untraced would blind the tampering flags.
 */
export const MAX_TRACER_RESTARTS = 3;

/** The run cannot go on traced: the agent stopped its tracer more often than it is restarted. */
export class TracerLostError extends TbrlError {
  constructor(detail: string) {
    super(
      'TRACER_LOST',
      `The tracer was lost again (${detail}) after it had been restarted ${MAX_TRACER_RESTARTS} times; the run ends here rather than go on untraced.`,
      'the agent kills or stops strace (visible in its PID namespace); a run that must survive this can be made with tracing off (`trace: false`), which also turns DepGPO off.',
    );
  }
}

/**
 * Prints the state of the tracer of the frame shell `$1` ("ok PID", "stopped PID" or "dead"), then
 * one line per other strace of ours that is stopped. Plain sh and /proc (task images may lack ps).
 */
const TRACER_STATE = [
  'st() { s=; t=; while read -r k v rest; do case $k in State:) s=$v;; TracerPid:) t=$v;; esac; done <"/proc/$1/status"; } 2>/dev/null',
  'st "$1"; tr=$t',
  'if [ -z "$tr" ] || [ "$tr" = 0 ]; then echo dead; else st "$tr"; case $s in T|t) echo "stopped $tr";; "") echo dead;; *) echo "ok $tr";; esac; fi',
  'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$tr" ] && continue; read -r c <"$d/comm" 2>/dev/null || continue',
  '  [ "$c" = ld.so ] || continue; st "$p"; case $s in T|t) echo "stray $p";; esac; done',
].join('\n');

/**
 * Kills what a lost tracer leaves: every strace of ours (comm ld.so: it runs through the bundled
 * loader) and every process with more seccomp filters than the container's init, i.e. everything
 * started under a strace --seccomp-bpf (the old frame shell, its commands, their background jobs):
 * untraced now, they must not go on running agent code. What the image's entrypoint started is
 * spared (a service may install seccomp filters of its own; agent processes never become its
 * descendants: orphans go to init). `$1`: the old frame shell (killed even where the kernel does
 * not report Seccomp_filters).
 */
const KILL_UNTRACED = [
  'f() { n=; while read -r k v rest; do [ "$k" = Seccomp_filters: ] && n=$v; done <"$1/status"; } 2>/dev/null',
  'ps1() { pp=; st=; read -r s <"/proc/$1/stat" || return 1; s=${s##*") "}; set -- $s; pp=$2; st=${20}; } 2>/dev/null',
  // The entrypoint: init's oldest child when an init (docker-init) runs as pid 1.
  'entry=; read -r c1 </proc/1/comm; if [ "$c1" != sleep ] && [ "$c1" != sh ] && [ "$c1" != bash ]; then es=',
  '  for d in /proc/[0-9]*; do ps1 "${d#/proc/}" || continue; [ "$pp" = 1 ] && { [ -z "$es" ] || [ "$st" -lt "$es" ]; } && { entry=${d#/proc/}; es=$st; }; done; fi',
  'spared() { [ -n "$entry" ] || return 1; q=$1; while [ -n "$q" ] && [ "$q" -gt 1 ]; do [ "$q" = "$entry" ] && return 0; ps1 "$q" || return 1; q=$pp; done; return 1; }',
  'f /proc/1; base=$n; for pass in 1 2; do pids="$1"',
  '  for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] && continue; read -r c <"$d/comm" 2>/dev/null || continue',
  '    if [ "$c" = ld.so ]; then pids="$pids $p"; continue; fi',
  '    f "$d"; [ -n "$base" ] && [ -n "$n" ] && [ "$n" -gt "$base" ] && ! spared "$p" && pids="$pids $p"; done',
  '  kill -9 $pids 2>/dev/null; done; exit 0',
].join('\n');

function parsePidReply(output: string): { pid: number; stray: string } {
  const at = output.lastIndexOf(`\n${PID_TAG}`);
  const start = at >= 0 ? at : output.startsWith(PID_TAG) ? -1 : -2;
  if (start === -2) return { pid: NaN, stray: output };
  const pid = Number(output.slice(start + 1 + PID_TAG.length).trim());
  return { pid, stray: output.slice(0, Math.max(0, start)) };
}

/**
 * Wraps a sandbox so `exec(cmd, { trace: true })` returns `ExecResult.trace`. Tracing runs in a
 * helper container (the task image needs no strace). When it cannot start, the returned sandbox
 * still works, untraced, and `info.tracing` says why, for the trajectory header.
 */
export async function createTracedSandbox(inner: Sandbox, options: TracedSandboxOptions = {}): Promise<TracedSandbox> {
  if (options.enabled === false) return new Traced(inner, undefined, { available: false, reason: 'tracing disabled by configuration' });
  const docker = options.docker ?? connectDocker().docker;
  let helper: StraceHelper | undefined;
  try {
    // Shell mode's lines come on strace's stderr, so its helper gets no FIFO (no host directory, no mkfifo
    // process, one mount less per trial) unless asked for; the attach fallback then reads the exec stream.
    const shellMode = (options.mode ?? 'shell') === 'shell';
    helper = await StraceHelper.start(docker, inner.info.containerId, { image: options.tracerImage, fifo: options.fifo ?? (shellMode ? false : undefined) });
    let shell: StraceShell | undefined;
    let shellFailure = '';
    if (shellMode) {
      shell = await StraceShell.start(inner, docker, helper, { maxOutputBytes: options.maxOutputBytes })
        .catch((err: Error) => {
          shellFailure = `; shell mode unavailable (${err.message.split('\n')[0]})`;
          return undefined;
        });
    }
    const engine = await TraceEngine.start(inner, helper, docker, options, shell);
    const method = shell ? SHELL_METHOD : METHOD;
    return new Traced(inner, engine, { available: true, method: `${method}; lines via ${shell ? 'strace\'s stderr on the exec stream' : helper.transport}${shellFailure}` });
  } catch (err) {
    await helper?.remove();
    const reason = err instanceof TracerUnavailable ? err.reason : `tracer failed to start: ${(err as Error).message}`;
    return new Traced(inner, undefined, { available: false, method: METHOD, reason });
  }
}

/** Pure: what a traced verifier run inspected, in the shape DepGPO's E is built from. */
export function toVerifierTrace(trace: CommandTrace): VerifierTrace {
  return {
    reads: [...trace.reads],
    writes: trace.writes.map((w) => w.path),
    ports: [...new Set([...(trace.probedPorts ?? []), ...trace.ports])],
    processes: [...(trace.inspectedProcesses ?? [])],
    ...(trace.checkedPaths?.length ? { checked: [...trace.checkedPaths] } : {}),
  };
}

class TraceEngine {
  private seq = 0;
  private readonly writtenBefore = new Set<string>();
  /** Background-job output the marker execs received; handed to the caller with the next result. */
  stray = '';

  /** Shell mode: the shell's pid, learned from the shell itself. */
  private pid = 0;
  /** Set once strace is found dead and could not be restarted: why, for every later trace. */
  lost?: string;
  /** How often the tracer was restarted after the agent killed or stopped it. */
  tracerRestarts = 0;
  /** Shell mode: the traced shell's state directory, learned from the shell (a restart carries it over). */
  private stateDir?: string;

  private constructor(
    private readonly inner: Sandbox,
    private readonly helper: StraceHelper,
    private readonly docker: Docker,
    public straceShell: StraceShell | undefined,
    private windows: TraceWindows,
    readonly history: FileHistory,
    private readonly reader: BatchReader | undefined,
    private readonly log: RotatingLog | undefined,
    private readonly options: TracedSandboxOptions,
  ) {}

  static async start(inner: Sandbox, helper: StraceHelper, docker: Docker, options: TracedSandboxOptions, shell?: StraceShell): Promise<TraceEngine> {
    const log = options.logPath ? new RotatingLog(options.logPath, options.maxLogBytes ?? 32 * 1024 * 1024) : undefined;
    // Without the batch reader, written files are read one archive call each: slower, same result.
    const reader = await BatchReader.start(helper.container).catch(() => undefined);
    const history = new FileHistory(docker, inner.info.image, (p) => inner.getArchive(p), reader, helper.container.id);
    const engine = new TraceEngine(inner, helper, docker, shell, new TraceWindows(0, '/', 0), history, reader, log, options);
    // The baseline container is needed at the first write of a file never seen; start it now.
    history.warm();
    await engine.attachToShell();
    return engine;
  }

  get shellPid(): number {
    return this.straceShell ? this.pid : (this.helper.tracedPid ?? 0);
  }

  /** Every command of the traced sandbox, traced or not, goes to the shell being traced. */
  run(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    return this.straceShell ? this.straceShell.run(command, options) : this.inner.exec(command, options);
  }

  /**
   * Asks the frame shell for its pid (the command process's $PPID, as seen in the shared PID
   * namespace) and cwd, and attaches strace to it. Only this pid's marker opens cut the trace
   * (the frame shell opens them around each traced command: shell.ts `__tbrl_mark`), so a traced
   * command costs one round trip like an untraced one.
   */
  private async attachToShell(): Promise<void> {
    // The command process's state directory (frame shell, shell.ts) rides along: a tracer restart carries it over.
    const r = await this.run(`builtin printf '\\n${PID_TAG}%s %s %s\\n' "$PPID" "\${__tbrl_d:--}" "$PWD"`, { timeoutMs: 10_000 });
    const m = new RegExp(`\\n${PID_TAG}(\\d+) (\\S+) (.*)\\n`).exec(`\n${r.output}`);
    if (!m) throw new TracerUnavailable(`the shell did not report its pid (got ${JSON.stringify(r.output.slice(0, 80))})`);
    // In shell mode the frame shell said its own pid ($$) when it started; a command's $PPID is
    // only its parent, which a replaced `bash` (a wrapper forking the real one) makes another process.
    const pid = this.straceShell ? this.straceShell.pid : Number(m[1]);
    this.stray += r.output.slice(0, Math.max(0, m.index - 1));
    // Proves lines flow end to end; a FIFO shared with a daemon inside a VM never carries any.
    for (;;) {
      const windows = new TraceWindows(pid, m[3], this.options.maxEventsPerCommand ?? 200_000, this.log);
      if (this.straceShell) {
        this.pid = pid;
        this.stateDir = m[2] === '-' ? undefined : m[2];
        this.straceShell.retarget((line) => windows.onLine(line));
      } else {
        await this.helper.attach(pid, (line) => windows.onLine(line));
      }
      // Marker 0, opened by the frame shell itself around an empty command.
      await this.run(':', { timeoutMs: 10_000, traceMark: 0 });
      if (await windows.waitForEnd(0, 3000)) {
        this.windows = windows;
        return;
      }
      if (this.straceShell || this.helper.transport !== 'fifo') throw new TracerUnavailable('strace runs with the shell but no trace lines arrived');
      this.helper.dropFifo();
      this.helper.detach();
    }
  }

  async exec(command: string, options: ExecOptions): Promise<ExecResult> {
    const n = ++this.seq;
    const notes: string[] = [];
    const endTimeout = this.options.endMarkTimeoutMs ?? 10_000;
    let window: TraceWindow | undefined;
    let pid = this.shellPid;
    // The frame shell may have been started again since the last traced command (the agent killed
    // it in an untraced one): the windows follow the pid that opens the markers.
    if (this.straceShell ? this.straceShell.pid !== pid : options.background) {
      const now = await this.framePid();
      if (now !== pid) {
        await this.attachToShell();
        pid = this.shellPid;
      }
    }
    // A stopped strace freezes the command at its next traced syscall, and the frame shell after
    // it: at the timeout (while the shell kills the command) it is found and killed, so the shell
    // comes back (its opens now fail) and the tracer restart below carries its state over.
    let stoppedTracer = false;
    const watch = !options.background && options.timeoutMs && this.straceShell ? setTimeout(() => {
      void this.tracerHealth().then(async (h) => {
        if (h.tracer !== 'stopped' || !h.pid) return;
        stoppedTracer = true;
        await this.inner.execArgv(['kill', '-9', String(h.pid)], { timeoutMs: 10_000 }).catch(() => undefined);
      });
    }, options.timeoutMs) : undefined;
    // The frame shell opens marker n before it starts the command's process and again after `wait`
    // (after the fork, for a background command): nothing the command does can move either.
    const result = await this.run(command, { ...options, traceMark: n });
    clearTimeout(watch);
    window = await this.windows.waitForEnd(n, result.timedOut ? 1000 : Math.min(2000, endTimeout));
    // The tracer is checked before asking the shell anything: without it the shell's opens fail,
    // and a stopped one would freeze that command too.
    if (!window && this.straceShell) {
      const health = await this.tracerHealth();
      if (health.tracer !== 'ok') return this.restartTracer(n, command, result, stoppedTracer ? 'stopped' : health.tracer);
      if (health.stray.length) notes.push(await this.endStrayTracers(n, command, health.stray));
    }
    if (!window) {
      // A timeout may have restarted the shell (or the agent killed it): its markers are gone.
      if ((await this.framePid()) === pid) window = await this.windows.waitForEnd(n, endTimeout);
      else {
        notes.push('the shell was restarted during the command (timeout); its trace is lost');
        await this.attachToShell().catch((err) => notes.push(`re-attaching failed: ${(err as Error).message}`));
      }
    }
    if (this.stray) {
      result.output = this.stray + result.output;
      this.stray = '';
    }
    if (!window && this.straceShell) {
      const health = await this.tracerHealth();
      if (health.tracer !== 'ok') return this.restartTracer(n, command, result, health.tracer);
    }
    if (!window && notes.length === 0) notes.push('the end of the command never appeared in the trace');
    if (window?.forgedCount) notes.unshift(`${FORGED_MARKER}: ${window.forged!.join(', ')}${window.forgedCount > window.forged!.length ? ` and ${window.forgedCount - window.forged!.length} more` : ''} (only the frame shell's own marker opens cut the trace; these were ignored, but the agent tried to hide syscalls from it)`);
    if (window?.dropped) notes.push(`${window.dropped} syscall events beyond the per-command cap were dropped`);
    const events = window?.events ?? [];

    const parser = this.windows.parser;
    const ctx = { writtenBefore: this.writtenBefore, shellPid: pid, commOf: (p: number) => parser.commOf(p) };
    let raw = aggregate(events, ctx);
    const settle = this.options.settle ?? { quietMs: 300, maxMs: 3000 };
    if (settle && raw.outlived.length > 0) {
      const pids = raw.outlived.map((s) => Number(s.split(':')[0]));
      const late = await this.windows.settle(pids, settle.quietMs, settle.maxMs);
      if (late.length) raw = aggregate([...events, ...late], ctx);
    }

    const files = await resolveWrites(
      [...raw.written, ...raw.removed],
      (ps) => this.history.after(ps, this.shellPid),
      (ps) => this.history.before(ps),
      this.options.maxFilesPerCommand ?? 256,
      (p, content) => this.history.remember(p, content),
    );
    notes.push(...files.notes);
    for (const w of files.writes) this.writtenBefore.add(w.path);
    for (const p of raw.written) this.writtenBefore.add(p);

    const trace: CommandTrace = {
      reads: raw.reads,
      writes: files.writes,
      stdoutValues: extractStdoutValues(result.output),
      ports: raw.ports,
      processes: raw.outlived,
      probedPorts: raw.probed,
      inspectedProcesses: raw.inspectedPids.map((p) => `${p}:${parser.commOf(p) ?? '?'}`),
      ...(raw.metaWritten.length ? { metaWrites: raw.metaWritten } : {}),
      ...(raw.checked.length ? { checkedPaths: raw.checked } : {}),
    };
    if (notes.length) trace.incomplete = notes.join('; ');
    return { ...result, trace };
  }

  /**
   * strace is gone or frozen (the agent killed or stopped it: it runs in the task container, in the
   * agent's PID namespace). The traced shell cannot run without it (with --seccomp-bpf and no
   * tracer every traced syscall fails), so everything started under it is killed and a new traced
   * shell takes over with the old one's state: later commands are traced again. The command's own
   * trace is incomplete, so it says "tracer lost" and DepGPO falls back for the run (one step's
   * edges are missing) instead of crediting a graph with a hole. Bounded: see MAX_TRACER_RESTARTS.
   */
  private async restartTracer(n: number, command: string, result: ExecResult, how: 'stopped' | 'dead'): Promise<ExecResult> {
    const what = `strace was ${how === 'dead' ? 'killed' : 'stopped (SIGSTOP)'} during traced command ${n} (${command.slice(0, 60)})`;
    if (this.tracerRestarts >= MAX_TRACER_RESTARTS) {
      await this.killUntraced();
      throw new TracerLostError(what);
    }
    this.tracerRestarts++;
    const old = this.straceShell!;
    const carry = { stateDir: this.stateDir, cwd: old.cwd };
    old.close();
    await this.killUntraced(old.pid);
    try {
      this.straceShell = await StraceShell.start(this.inner, this.docker, this.helper, { maxOutputBytes: this.options.maxOutputBytes, carry });
      await this.attachToShell();
    } catch (err) {
      return this.loseTracer(`${TRACER_LOST}: ${what}; restarting it failed (${(err as Error).message.split('\n')[0]}); later commands ran untraced`, result);
    }
    const incomplete = `${TRACER_LOST}: ${what}; restarted (${this.tracerRestarts} of ${MAX_TRACER_RESTARTS}), so this command's trace is incomplete and later commands are traced again`;
    result.output += `\n[note: the tracer was ${how === 'dead' ? 'killed' : 'stopped'} during this command, so its trace is incomplete (and its output may be garbled: files cannot be opened once the tracer is gone). It was restarted (${this.tracerRestarts} of ${MAX_TRACER_RESTARTS} times; the next loss ends the run) in a new shell in ${carry.cwd ?? 'the working directory'} with the variables, functions and options from before this command; processes left running under the old tracer were stopped. DepGPO falls back to f_t = 1 for this run]\n`;
    return { ...result, trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [], incomplete } };
  }

  /**
   * A stopped strace of ours that no longer traces the current shell (the command's timeout found
   * the shell stuck behind it and the shell was restarted under a new strace): killed, and it
   * counts as a lost tracer. Returns the note for the command's trace.
   */
  private async endStrayTracers(n: number, command: string, pids: number[]): Promise<string> {
    const what = `strace was stopped (SIGSTOP) during traced command ${n} (${command.slice(0, 60)})`;
    await this.inner.execArgv(['kill', '-9', ...pids.map(String)], { timeoutMs: 10_000 }).catch(() => undefined);
    if (this.tracerRestarts >= MAX_TRACER_RESTARTS) throw new TracerLostError(what);
    this.tracerRestarts++;
    return `${TRACER_LOST}: ${what}; the command timed out, its shell was restarted under a new strace (${this.tracerRestarts} of ${MAX_TRACER_RESTARTS}) and the stopped one killed`;
  }

  /** Restarting failed: later commands run untraced in the sandbox's own shell, `reason` in every later trace. */
  private async loseTracer(reason: string, result: ExecResult): Promise<ExecResult> {
    this.lost = reason;
    const cwd = this.straceShell?.cwd;
    this.straceShell?.close();
    await this.killUntraced(this.straceShell?.pid);
    // The sandbox's own shell takes over where the traced one was.
    if (cwd) await this.inner.exec(`builtin cd -- ${ansiCQuote(cwd)}`, { timeoutMs: 10_000 }).catch(() => undefined);
    result.output += `\n[note: the tracer was lost during this command and could not be restarted; its output above may be garbled. Later commands run untraced in a fresh shell${cwd ? ` in ${cwd}` : ''} (exported variables reset), and DepGPO falls back to f_t = 1 for this run]\n`;
    return { ...result, trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [], incomplete: this.lost } };
  }

  /** See KILL_UNTRACED; best effort (a container without sh keeps them, and they cannot open files). */
  private async killUntraced(framePid?: number): Promise<void> {
    await this.inner.execArgv(['sh', '-c', KILL_UNTRACED, 'tbrl-kill-untraced', framePid ? String(framePid) : ''], { timeoutMs: 15_000 }).catch(() => undefined);
  }

  /**
   * The current traced shell's strace (it lives in the task container, where the agent can kill or
   * stop it), and other straces of ours found stopped. Unknown (no sh in the image) counts as ok.
   */
  private async tracerHealth(): Promise<{ tracer: 'ok' | 'stopped' | 'dead'; pid?: number; stray: number[] }> {
    const pid = this.straceShell?.pid ?? this.pid;
    const r = await this.inner.execArgv(['sh', '-c', TRACER_STATE, 'tbrl-tracer-state', String(pid)], { timeoutMs: 10_000 }).catch(() => undefined);
    if (!r || r.exitCode !== 0) return { tracer: 'ok', stray: [] };
    const lines = r.output.split('\n');
    const tracer = lines[0].startsWith('dead') ? 'dead' : lines[0].startsWith('stopped') ? 'stopped' : 'ok';
    const stray = lines.filter((l) => l.startsWith('stray ')).map((l) => Number(l.slice(6))).filter((p) => p > 0);
    return { tracer, pid: Number(lines[0].split(' ')[1]) || undefined, stray };
  }

  /**
   * The frame shell's pid as the shell answers now (a command's $PPID in attach mode). Any output of background
   * jobs the sandbox delivered with this exec belongs to the caller's next command, as in a terminal.
   */
  private async framePid(): Promise<number> {
    const r = await this.run(`builtin printf '\\n${PID_TAG}%s\\n' "$PPID"`, { timeoutMs: 10_000 });
    const { pid, stray } = parsePidReply(r.output);
    this.stray += stray;
    // Shell mode: the pid the frame shell gave itself (the command above started it if it had ended).
    return this.straceShell ? this.straceShell.pid : pid;
  }

  /** Current content of `paths` in the sandbox, in one round trip through the helper (FileHistory.current). */
  readCurrent(paths: readonly string[]): Promise<PromiseSettledResult<FileContent>[]> {
    return this.history.current(paths, this.shellPid);
  }

  shellCwd(): string | undefined {
    return this.shellPid ? this.windows.parser.cwdOf(this.shellPid) : undefined;
  }

  async close(): Promise<void> {
    this.straceShell?.close();
    this.reader?.close();
    await this.helper.remove();
    await this.history.close();
    this.log?.close();
  }
}

class Traced implements TracedSandbox {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly inner: Sandbox,
    private readonly engine: TraceEngine | undefined,
    readonly tracing: TracingStatus,
  ) {}

  get info(): SandboxInfo {
    return { ...this.inner.info, tracing: this.tracing };
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    // Marker, command and marker must not interleave with another caller's command.
    const job = this.queue.then(async () => {
      if (this.engine?.lost) {
        // The traced shell is gone with its tracer: the sandbox's own shell takes over, untraced.
        const result = await this.inner.exec(command, options);
        return options.trace ? { ...result, trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [], incomplete: this.engine.lost } } : result;
      }
      if (options.trace && this.engine) return this.engine.exec(command, options);
      const result = await (this.engine ? this.engine.run(command, options) : this.inner.exec(command, options));
      if (this.engine?.stray) {
        result.output = this.engine.stray + result.output;
        this.engine.stray = '';
      }
      return result;
    });
    this.queue = job.catch(() => undefined);
    return job;
  }

  async traceVerifier(command: string, options: ExecOptions = {}): Promise<{ result: ExecResult; verifier?: VerifierTrace }> {
    const result = await this.exec(command, { ...options, trace: true });
    return { result, verifier: result.trace ? toVerifierTrace(result.trace) : undefined };
  }

  execArgv(argv: string[], options?: ExecOptions & { cwd?: string; env?: Record<string, string>; user?: string }): Promise<ExecResult> {
    return this.inner.execArgv(argv, options);
  }

  readFile(path: string): Promise<Buffer> {
    return this.inner.readFile(path);
  }

  async writeFile(path: string, content: Buffer | string, mode?: number): Promise<void> {
    // Relative paths are relative to the shell the agent uses, which in shell mode is ours.
    const cwd = this.engine?.shellCwd();
    const abs = posix.isAbsolute(path) ? posix.normalize(path) : cwd ? posix.join(cwd, path) : undefined;
    await this.inner.writeFile(abs ?? path, content, mode);
    // A file action's write is the "before" of the next traced command touching the file.
    if (abs && this.engine) this.engine.history.remember(abs, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  }

  putArchive(tar: Readable | Buffer, destDir: string): Promise<void> {
    return this.inner.putArchive(tar, destDir);
  }

  getArchive(path: string): Promise<Readable> {
    return this.inner.getArchive(path);
  }

  readFiles(paths: readonly string[]): Promise<PromiseSettledResult<FileContent>[]> {
    // A lost tracer's helper may still run, but its shell pid is stale: the archive API answers then.
    const oneByOne = (): Promise<PromiseSettledResult<FileContent>[]> => Promise.allSettled(paths.map((p) => readThroughArchive((q) => this.inner.getArchive(q), p)));
    // The helper's reader ended (killed with the helper): the archive API still answers.
    if (this.engine && !this.engine.lost) return this.engine.readCurrent(paths).catch(oneByOne);
    return oneByOne();
  }

  async checkpoint(step: number): Promise<Checkpoint> {
    const checkpoint = await this.inner.checkpoint(step);
    // In shell mode the agent's cwd and environment live in the traced shell, not the sandbox's.
    const shell = this.engine?.straceShell;
    if (!shell) return checkpoint;
    const state = await shell.state();
    return { ...checkpoint, cwd: state.cwd, env: state.env };
  }

  originalImage(): Promise<ImageRef> {
    return this.inner.originalImage();
  }

  originals(image: ImageRef, runId: string): OriginalSource {
    return this.inner.originals(image, runId);
  }

  async close(): Promise<void> {
    try {
      await this.inner.close();
    } finally {
      await this.engine?.close();
    }
  }
}
