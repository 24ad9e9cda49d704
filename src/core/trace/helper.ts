import type Docker from 'dockerode';
import type { Duplex } from 'node:stream';
import { DockerDemuxer } from '../sandbox/demux';
import { LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../sandbox/types';
import { TRACED_SYSCALLS } from './strace-parser';

export const TRACER_IMAGE = 'tbrl-standin/tracer:latest';
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
}

/**
 * A container sharing the task container's PID namespace with CAP_SYS_PTRACE, so strace from the
 * helper image can follow the task's shell without the task image containing strace. One helper per
 * sandbox; a new strace process is started in it whenever the shell's pid changes (shell restart).
 */
export class StraceHelper {
  private strace?: { stream: Duplex; pid: number };

  private constructor(readonly container: Docker.Container) {}

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
          NetworkMode: 'none',
          // The trace goes to our attach stream; a json-file log would be an unbounded copy of it.
          LogConfig: { Type: 'none', Config: {} },
          Memory: 256 * 1024 * 1024,
        },
      });
    } catch (err) {
      throw new TracerUnavailable(`could not create the tracer helper container: ${(err as Error).message}`);
    }
    const helper = new StraceHelper(container);
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
      Cmd: ['strace', '-f', '-tt', '-y', '-o', '/dev/stdout', '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-e', 'signal=none', '-p', String(pid)],
      AttachStdout: true,
      AttachStderr: true,
    });
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
    await this.container.remove({ force: true }).catch(() => undefined);
  }
}
