import type Docker from 'dockerode';
import type { Duplex } from 'node:stream';
import { execFileSync } from 'node:child_process';
import { constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerDemuxer } from '../sandbox/demux';
import { STRACE_BUNDLE_IMAGE } from '../sandbox/strace-volume';
import { LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../sandbox/types';
import { TRACED_SYSCALLS } from './strace-parser';

export const TRACER_IMAGE = STRACE_BUNDLE_IMAGE;
/** Same value the sandbox provider writes, so `tbrl gc` and the leak check find helpers too. */
const PROJECT_LABEL_VALUE = 'tbrl';
export const LABEL_KIND = 'dev.tbrl.kind';

/** Why tracing could not start, phrased for the trajectory header and the user. */
export class TracerUnavailable extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface HelperOptions {
  image?: string;
  /** Time to wait for strace to report the attach. */
  attachTimeoutMs?: number;
  /**
   * Deliver trace lines through a FIFO in a host directory bind-mounted into the helper (default
   * true for a local daemon): on a busy machine, pushing every line through dockerd's exec stream
   * costs as much CPU as the tracing itself. Nothing is stored: a FIFO has no size.
   */
  fifo?: boolean;
}

const FIFO_MOUNT = '/tbrl-trace';
const FIFO_NAME = 'strace.fifo';

/** A host FIFO read without blocking; we hold it open read-write so it never reports EOF between straces. */
class FifoSource {
  private onLine?: (line: string) => void;
  private carry = '';

  private constructor(
    readonly dir: string,
    private readonly socket: Socket,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      const lines = (this.carry + text).split('\n');
      this.carry = lines.pop() ?? '';
      for (const line of lines) this.onLine?.(line);
    });
    socket.on('error', () => undefined);
  }

  static create(): FifoSource | undefined {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(tmpdir(), 'tbrl-trace-'));
      const path = join(dir, FIFO_NAME);
      execFileSync('mkfifo', ['-m', '0666', path], { stdio: 'ignore' });
      const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
      return new FifoSource(dir, new Socket({ fd, readable: true, writable: false }));
    } catch {
      if (dir) rmSync(dir, { recursive: true, force: true });
      return undefined;
    }
  }

  listen(onLine: (line: string) => void): void {
    this.carry = '';
    this.onLine = onLine;
  }

  close(): void {
    this.onLine = undefined;
    this.socket.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A container sharing the task container's PID namespace with CAP_SYS_PTRACE, so strace from the
 * helper image can follow the task's shell without the task image containing strace. One helper per
 * sandbox; a new strace process is started in it whenever the shell's pid changes (shell restart).
 */
export class StraceHelper {
  private strace?: { stream: Duplex; pid: number };
  /** Set while trace lines come through the FIFO; cleared when falling back to the exec stream. */
  private fifo?: FifoSource;

  private constructor(
    readonly container: Docker.Container,
    fifo: FifoSource | undefined,
  ) {
    this.fifo = fifo;
  }

  get transport(): 'fifo' | 'exec-stream' {
    return this.fifo ? 'fifo' : 'exec-stream';
  }

  /** The FIFO did not carry lines (a daemon in a VM cannot share it): use the exec stream from now on. */
  dropFifo(): void {
    this.fifo?.close();
    this.fifo = undefined;
  }

  static async start(docker: Docker, taskContainerId: string, options: HelperOptions = {}): Promise<StraceHelper> {
    const image = options.image ?? TRACER_IMAGE;
    try {
      await docker.getImage(image).inspect();
    } catch {
      throw new TracerUnavailable(`tracer image ${image} is missing; build it with \`node scripts/build-standins.mjs\` (recipe sandbox/images/tracer.Dockerfile)`);
    }
    let labels: Record<string, string> = {};
    try {
      labels = (await docker.getContainer(taskContainerId).inspect()).Config?.Labels ?? {};
    } catch (err) {
      throw new TracerUnavailable(`task container ${taskContainerId.slice(0, 12)} cannot be inspected: ${(err as Error).message}`);
    }
    const fifo = options.fifo === false ? undefined : FifoSource.create();
    let container: Docker.Container;
    try {
      container = await docker.createContainer({
        Image: image,
        Entrypoint: ['sleep', 'infinity'],
        Cmd: [],
        Labels: {
          [LABEL_PROJECT]: PROJECT_LABEL_VALUE,
          [LABEL_RUN]: labels[LABEL_RUN] ?? 'unknown',
          [LABEL_PID]: String(process.pid),
          [LABEL_KIND]: 'tracer',
        },
        HostConfig: {
          PidMode: `container:${taskContainerId}`,
          CapAdd: ['SYS_PTRACE'],
          // The task container's network namespace rather than one of its own: the helper uses no network,
          // and a namespace made and torn down per helper doubled its create + start + remove (0.29 → 0.57
          // CPU-s a helper, 4 at once, on the two-core bench machine).
          NetworkMode: `container:${taskContainerId}`,
          // The trace goes to our attach stream; a json-file log would be an unbounded copy of it.
          LogConfig: { Type: 'none', Config: {} },
          Memory: 256 * 1024 * 1024,
          Binds: fifo ? [`${fifo.dir}:${FIFO_MOUNT}`] : undefined,
        },
      });
    } catch (err) {
      fifo?.close();
      throw new TracerUnavailable(`could not create the tracer helper container: ${(err as Error).message}`);
    }
    const helper = new StraceHelper(container, fifo);
    try {
      await container.start();
    } catch (err) {
      await helper.remove();
      throw new TracerUnavailable(`could not start the tracer helper (PID namespace sharing or SYS_PTRACE not allowed?): ${(err as Error).message}`);
    }
    return helper;
  }

  get tracedPid(): number | undefined {
    return this.strace?.pid;
  }

  /**
   * Starts `strace -p pid` (stopping a previous one) and resolves once strace reports the attach.
   * Lines of trace go to `onLine`; the returned promise rejects with the reason when ptrace is refused.
   */
  async attach(pid: number, onLine: (line: string) => void, options: HelperOptions = {}): Promise<void> {
    this.detach();
    const exec = await this.container.exec({
      // -o /dev/stdout: trace lines on stdout, strace's own messages on stderr, so they never interleave.
      // -y: strace resolves fds (AT_FDCWD included) to paths itself, from the tracee's /proc.
      // No -tt: timestamps are not used and cost formatting per line.
      Cmd: ['strace', '-f', '-y', '-o', this.fifo ? `${FIFO_MOUNT}/${FIFO_NAME}` : '/dev/stdout', '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-e', 'signal=none', '-p', String(pid)],
      AttachStdout: true,
      AttachStderr: true,
    });
    this.fifo?.listen(onLine);
    const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
    this.strace = { stream, pid };
    let carry = '';
    let stderr = '';
    let onStderr: (() => void) | undefined;
    const demux = new DockerDemuxer((kind, payload) => {
      if (kind === 'stderr') {
        stderr = (stderr + payload.toString('utf8')).slice(-4000);
        onStderr?.();
        return;
      }
      const text = carry + payload.toString('utf8');
      const lines = text.split('\n');
      carry = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
    stream.on('data', (chunk: Buffer) => demux.push(chunk));
    const ended = new Promise<'ended'>((resolve) => {
      stream.on('end', () => resolve('ended'));
      stream.on('close', () => resolve('ended'));
      stream.on('error', () => resolve('ended'));
    });
    // strace announces a successful PTRACE_SEIZE on stderr; when ptrace is refused it says why and exits.
    const attachedMsg = `Process ${pid} attached`;
    const outcome = await Promise.race([
      ended,
      new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), options.attachTimeoutMs ?? 10_000)),
      new Promise<'ok'>((resolve) => {
        onStderr = () => { if (stderr.includes(attachedMsg)) resolve('ok'); };
        onStderr();
      }),
    ]);
    onStderr = undefined;
    if (outcome !== 'ok') {
      this.detach();
      const why = stderr.trim() || (outcome === 'timeout' ? 'no answer from strace' : 'strace exited');
      throw new TracerUnavailable(`strace could not attach to the shell (pid ${pid}): ${why}`);
    }
  }

  detach(): void {
    this.strace?.stream.destroy();
    this.strace = undefined;
  }

  async remove(): Promise<void> {
    this.detach();
    this.fifo?.close();
    this.fifo = undefined;
    await this.container.remove({ force: true }).catch(() => undefined);
  }
}
