import { Duplex, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { containerAuxRunner, PersistentShell, ShellEndedError, type ShellSpawner } from '../sandbox/shell';
import { ansiCQuote } from '../sandbox/bash-quote';
import { STRACE_BUNDLE_DIR } from '../sandbox/strace-volume';
import { DockerDemuxer } from '../sandbox/demux';
import { DEFAULT_LIMITS, type ExecOptions, type ExecResult, type Sandbox } from '../sandbox/types';
import type { StraceHelper } from './helper';
import { TRACED_SYSCALLS } from './strace-parser';

/** Where the tracer image keeps its relocatable strace, and where it is copied in the task container. */
export const BUNDLE_DIR = STRACE_BUNDLE_DIR;

/** The shell state a restarted traced shell takes over: the old one's state directory and cwd. */
export interface CarriedState {
  stateDir?: string;
  cwd?: string;
}

/**
 * The frame shell's exec stream with strace's stderr taken out: stdout frames go on (re-framed)
 * to the PersistentShell, stderr bytes (the trace) to `onTrace`. Writes, end and destroy go to
 * the exec.
 */
function splitTrace(raw: Duplex, onTrace: (chunk: Buffer) => void): Duplex {
  const shellSide = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      raw.write(chunk, done);
    },
    final(done) {
      raw.end();
      done();
    },
    destroy(err, done) {
      raw.destroy();
      done(err);
    },
  });
  const demux = new DockerDemuxer((kind, payload) => {
    if (kind === 'stderr') return onTrace(payload);
    const header = Buffer.alloc(8);
    header[0] = 1;
    header.writeUInt32BE(payload.length, 4);
    shellSide.push(Buffer.concat([header, payload]));
  });
  raw.on('data', (chunk: Buffer) => demux.push(chunk));
  raw.on('end', () => shellSide.push(null));
  raw.on('close', () => shellSide.destroy());
  raw.on('error', (err) => shellSide.destroy(err));
  return shellSide;
}

/**
 * "Shell mode": a persistent shell started by strace inside the task container, so strace's
 * --seccomp-bpf applies (only syscalls we asked for stop the tracee; attaching with -p cannot do
 * that and costs ~3x on process-heavy commands). The shell is the sandbox's own PersistentShell
 * class, spawned through strace (copied in from the helper image with its own loader), with the
 * sandbox shell's exported environment and cwd carried over; every exec of the traced sandbox goes
 * to it so state stays in one place.
 *
 * Trace lines leave on strace's own stderr, which is the `docker exec` stream's stderr channel: no
 * path in the container names it (a FIFO did, and any root command could write forged lines into
 * it or read real ones out of it), the frame shell closes its copy before any command runs
 * (`exec 2>/dev/null`; commands get `2>&1` onto stdout), and the only process left holding it is
 * strace, whose /proc fds the caged commands cannot open (they lack a capability strace has).
 */
export class StraceShell {
  private constructor(
    /** Where trace lines go (of every strace this shell's respawns start); retarget() moves it. */
    private readonly route: { onLine: (line: string) => void },
    private readonly shell: PersistentShell,
    private readonly maxOutputBytes: number,
    private readonly inner: Sandbox,
  ) {}

  /**
   * `carry`: a restart after the tracer was lost; the new shell takes the old one's saved
   * variables, functions, aliases and options and its cwd. Otherwise the sandbox shell's exported
   * environment and cwd.
   */
  static async start(
    inner: Sandbox,
    docker: Docker,
    helper: StraceHelper,
    options: { maxOutputBytes?: number; carry?: CarriedState } = {},
  ): Promise<StraceShell> {
    const carry = options.carry;
    const cwd = carry ? (carry.cwd ?? '') : (await inner.exec('builtin printf %s "$PWD"', { timeoutMs: 10_000 })).output;
    const exported = carry ? '' : (await inner.exec('builtin export -p', { timeoutMs: 10_000 })).output;
    const container = docker.getContainer(inner.info.containerId);
    const route = { onLine: (_line: string): void => undefined };
    // As root with the cage helper mounted, the traced frame shell is the studio's static bash from
    // the read-only cage volume (as the sandbox's own frame shell is): the image's bash, which a
    // root command can replace, never sees the prelude and its nonce when the shell is restarted.
    // --posix: no $BASH_ENV (the prelude leaves posix mode). A non-root image keeps the image's
    // bash: there the volume's bash is execute-only, and strace (running as the image user) cannot
    // trace a program it may not read; the agent, not root, cannot replace the image's bash either.
    const cage = inner.info.cage;
    const frameShell = cage?.by === 'helper' && cage.frameShell ? [cage.frameShell, '--posix', '--noprofile', '--norc'] : ['bash', '--noprofile', '--norc'];

    const spawn: ShellSpawner = async (dir) => {
      // The bundle is the sandbox's read-only volume (sandbox/strace-volume.ts) where the provider
      // mounted it. Otherwise a fresh copy before every start: the agent (root) can replace files
      // under BUNDLE_DIR, and a strace of its own would write whatever trace it likes.
      if (!inner.info.straceBundle) {
        const bundle = (await helper.container.getArchive({ path: BUNDLE_DIR })) as unknown as Readable;
        await inner.putArchive(bundle, '/');
      }
      const exec = await container.exec({
        Cmd: [
          `${BUNDLE_DIR}/ld.so`, '--library-path', `${BUNDLE_DIR}/lib`, `${BUNDLE_DIR}/strace`,
          // -D: strace detaches as a grandchild and the exec'd process stays bash itself, so the
          // shell's stream ends when bash exits (not when its last background job does) and the
          // sandbox's timeout kill finds the command's processes as children of the shell.
          // No -o: the trace goes to strace's stderr, the exec's stderr channel (see the class comment).
          '-D', '--seccomp-bpf', '-f', '-q', '-y',
          '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-e', 'signal=none',
          '--', ...frameShell,
        ],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: dir,
      });
      const raw = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
      let carried = '';
      const stream = splitTrace(raw, (chunk) => {
        const lines = (carried + chunk.toString('utf8')).split('\n');
        carried = lines.pop() ?? '';
        for (const line of lines) route.onLine(line);
      });
      return { stream, exitCode: async () => (await exec.inspect().catch(() => undefined))?.ExitCode ?? null };
    };
    const aux = containerAuxRunner(container);
    const shell = new PersistentShell(spawn, aux, cwd || undefined);
    const self = new StraceShell(route, shell, options.maxOutputBytes ?? DEFAULT_LIMITS.maxOutputBytes, inner);
    const restore = carry ? restoreFrom(carry) : `${exported}\nbuiltin cd -- ${ansiCQuote(cwd || '/')}`;
    const r = await self.run(restore, { timeoutMs: 30_000 });
    if (!carry && r.exitCode !== 0) throw new Error(`could not carry the shell state over: ${r.output.slice(0, 200)}`);
    return self;
  }

  /** Trace lines of this shell's strace (and of the straces of shells it respawns) go to `onLine`. */
  retarget(onLine: (line: string) => void): void {
    this.route.onLine = onLine;
  }

  async run(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    try {
      return await this.shell.run(command, {
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes ?? this.maxOutputBytes,
        background: options.background,
        traceMark: options.traceMark,
      });
    } catch (err) {
      if (!(err instanceof ShellEndedError)) throw err;
      // The frame shell was killed: by its pid, or by `kill -9 -1`, which also stops the container.
      // One command through the sandbox's own shell starts the container again if so (with its note).
      const revived = await this.inner.exec(':', { timeoutMs: 30_000 }).then((r) => r.output, () => '');
      return {
        exitCode: await err.exitCode(),
        output: `${err.partialOutput}${revived || `[the shell exited; the next command starts a new shell in ${this.shell.cwd ?? 'the working directory'} with the container's original environment]`}\n`,
        droppedBytes: 0,
        timedOut: false,
        durationMs: 0,
      };
    }
  }

  /** The last working directory the traced shell reported. */
  get cwd(): string | undefined {
    return this.shell.cwd;
  }

  /** The frame shell's pid (in the container's PID namespace); its TracerPid is this shell's strace. */
  get pid(): number {
    return this.shell.pid;
  }

  state(): Promise<{ cwd: string; env: Record<string, string> }> {
    return this.shell.state();
  }

  close(): void {
    this.shell.close();
  }
}

/**
 * The first command of a restarted traced shell: the old shell's saved state, sourced as every
 * command process sources its own (options, variables, then the xtrace flag and the agent's
 * functions and aliases last, so none of them runs our lines); the command process's exit then
 * saves it into the new shell's state. The old shell's last cwd comes from its frames: the command
 * that killed the tracer may have died before saving its own.
 */
function restoreFrom(carry: CarriedState): string {
  const cd = carry.cwd ? `builtin cd -- ${ansiCQuote(carry.cwd)} 2>/dev/null\n` : '';
  if (!carry.stateDir) return `${cd}:`;
  const d = ansiCQuote(carry.stateDir);
  return `${cd}{ builtin . ${d}/opts; builtin . ${d}/vars; builtin . ${d}/trace; builtin . ${d}/funcs; } 2>/dev/null`;
}
