import type { Duplex, Readable } from 'node:stream';
import type Docker from 'dockerode';
import { containerAuxRunner, PersistentShell, ShellEndedError, type ShellSpawner } from '../sandbox/shell';
import { ansiCQuote } from '../sandbox/bash-quote';
import { DEFAULT_LIMITS, type ExecOptions, type ExecResult, type Sandbox } from '../sandbox/types';
import type { StraceHelper } from './helper';
import { TRACED_SYSCALLS } from './strace-parser';

/** Where the tracer image keeps its relocatable strace, and where it is copied in the task container. */
export const BUNDLE_DIR = '/.tbrl-strace';
export const CONTAINER_FIFO = `${BUNDLE_DIR}/trace.fifo`;

/**
 * "Shell mode": a persistent shell started by strace inside the task container, so strace's
 * --seccomp-bpf applies (only syscalls we asked for stop the tracee; attaching with -p cannot do
 * that and costs ~3x on process-heavy commands). The shell is the sandbox's own PersistentShell
 * class, spawned through strace (copied in from the helper image with its own loader), with the
 * sandbox shell's exported environment and cwd carried over; every exec of the traced sandbox goes
 * to it so state stays in one place. Trace lines leave through a FIFO the helper relays.
 */
export class StraceShell {
  private constructor(
    private readonly shell: PersistentShell,
    private readonly maxOutputBytes: number,
    private readonly inner: Sandbox,
  ) {}

  /** `beforeSpawn` runs once the bundle is in place and before strace opens the FIFO (it must have a reader). */
  static async start(
    inner: Sandbox,
    docker: Docker,
    helper: StraceHelper,
    options: { maxOutputBytes?: number; beforeSpawn?: () => Promise<void> } = {},
  ): Promise<StraceShell> {
    const bundle = (await helper.container.getArchive({ path: BUNDLE_DIR })) as unknown as Readable;
    await inner.putArchive(bundle, '/');
    await options.beforeSpawn?.();
    const cwd = (await inner.exec('builtin printf %s "$PWD"', { timeoutMs: 10_000 })).output;
    const exported = (await inner.exec('builtin export -p', { timeoutMs: 10_000 })).output;
    const container = docker.getContainer(inner.info.containerId);

    const spawn: ShellSpawner = async (dir) => {
      const exec = await container.exec({
        Cmd: [
          `${BUNDLE_DIR}/ld.so`, '--library-path', `${BUNDLE_DIR}/lib`, `${BUNDLE_DIR}/strace`,
          // -D: strace detaches as a grandchild and the exec'd process stays bash itself, so the
          // shell's stream ends when bash exits (not when its last background job does) and the
          // sandbox's timeout kill finds the command's processes as children of the shell.
          '-D', '--seccomp-bpf', '-f', '-q', '-y', '-o', CONTAINER_FIFO,
          '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-e', 'signal=none',
          '--', 'bash', '--noprofile', '--norc',
        ],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: dir,
      });
      const stream = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
      return { stream, exitCode: async () => (await exec.inspect().catch(() => undefined))?.ExitCode ?? null };
    };
    const aux = containerAuxRunner(container);
    const shell = new PersistentShell(spawn, aux, cwd || undefined);
    const self = new StraceShell(shell, options.maxOutputBytes ?? DEFAULT_LIMITS.maxOutputBytes, inner);
    const restore = await self.run(`${exported}\nbuiltin cd -- ${ansiCQuote(cwd || '/')}`, { timeoutMs: 30_000 });
    if (restore.exitCode !== 0) throw new Error(`could not carry the shell state over: ${restore.output.slice(0, 200)}`);
    return self;
  }

  async run(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    try {
      return await this.shell.run(command, {
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes ?? this.maxOutputBytes,
        background: options.background,
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

  state(): Promise<{ cwd: string; env: Record<string, string> }> {
    return this.shell.state();
  }

  close(): void {
    this.shell.close();
  }
}
