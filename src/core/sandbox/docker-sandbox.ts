import { posix } from 'node:path';
import type { Readable, Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { Checkpoint, ExecOptions, ExecResult, ImageRef, Sandbox, SandboxInfo, SandboxLimits } from './types';
import { LABEL_PROJECT, LABEL_RUN, LABEL_PID, LABEL_KIND, LABEL_STEP } from './types';
import { containerImage, imageOriginals, workspaceOriginals, type OriginalSource } from '../attribution/originals';
import { containerAuxRunner, PersistentShell, ShellEndedError, ShellUnresponsiveError, type AuxRunner } from './shell';
import { TbrlError } from '../errors';
import { CappedOutput } from './output-cap';
import { DockerDemuxer } from './demux';
import { KILL_SCRIPT } from './kill-script';
import { DiskWatchdog, diskLimitNotice } from './disk-watchdog';
import { readTarEntries, singleFileTar, toReadable } from './archive';
import { mapDockerError } from './docker-client';
import { workspacePatch } from './workspace';
import { ContainerGoneError, ContainerOomError, DockerDiedError, SandboxFileError, isNoSuchContainer, statusCode } from './errors';

export { LABEL_KIND, LABEL_STEP } from './types';

/** How often a sandbox starts its container again after the agent killed every process in it. */
const MAX_REVIVALS = 3;

export interface DockerSandboxInit {
  docker: Docker;
  container: Docker.Container;
  info: SandboxInfo;
  limits: SandboxLimits;
  runId: string;
  target: string;
  workdir?: string;
  /** Poll the writable layer against `limits.diskBytes` (when the storage driver cannot enforce it). */
  watchDisk?: boolean;
  /** The frame shell's bash: the studio's static one on the read-only mount, else the image's. */
  frameBash?: string;
}

export class DockerSandbox implements Sandbox {
  readonly info: SandboxInfo;
  private readonly docker: Docker;
  private readonly container: Docker.Container;
  private readonly runAux: AuxRunner;
  private readonly limits: SandboxLimits;
  private runId: string;
  private readonly target: string;
  private readonly shell: PersistentShell;
  private readonly frameBash: string;
  private closing?: Promise<void>;
  private oomKillsSeen = 0;
  /** Times the container was started again after a command killed every process in it. */
  private revivals = 0;
  private readonly diskWatchdog?: DiskWatchdog;
  /** Background writers were stopped between commands: the next command's result says so. */
  private pendingDiskNotice?: string;
  /** Set by the provider in copy mode: where the host workspace was copied, for `workspaceChanges`. */
  workspace?: { hostPath: string; containerPath: string; mode: 'copy' | 'bind' };

  constructor(init: DockerSandboxInit) {
    this.docker = init.docker;
    this.container = init.container;
    this.runAux = containerAuxRunner(init.container);
    this.info = init.info;
    this.limits = init.limits;
    this.runId = init.runId;
    this.target = init.target;
    this.frameBash = init.frameBash ?? 'bash';
    this.shell = new PersistentShell((cwd) => this.spawnShell(cwd), (argv) => this.runAux(argv), init.workdir);
    if (init.watchDisk) {
      this.diskWatchdog = new DiskWatchdog({
        limitBytes: this.limits.diskBytes,
        // `size` is a query parameter of the inspect API that the dockerode types omit.
        measure: async () => ((await this.container.inspect({ size: true } as Docker.ContainerInspectOptions)) as { SizeRw?: number }).SizeRw ?? 0,
        onExceeded: (written) => this.stopDiskWriters(written),
      });
    }
  }

  /** Duration of the disk watchdog's last poll in ms (undefined without a watchdog). */
  get diskPollMs(): number | undefined {
    return this.diskWatchdog?.lastPollMs;
  }

  private async stopDiskWriters(written: number): Promise<void> {
    const note = diskLimitNotice(this.limits.diskBytes, written);
    if (await this.shell.requestStop({ note, fields: { diskLimitExceeded: true } })) return;
    await this.shell.killAllButShell();
    this.pendingDiskNotice = note;
  }

  /** Hands a between-commands disk stop to the first result after it. */
  private withDiskNotice(result: ExecResult): ExecResult {
    const note = this.pendingDiskNotice;
    if (!note) return result;
    this.pendingDiskNotice = undefined;
    result.output = `${note}\n${result.output}`;
    result.diskLimitExceeded = true;
    return result;
  }

  /** The persistent shell (read-only use: how its commands are caged). */
  get frameShell(): Pick<PersistentShell, 'cage' | 'cagedBy' | 'uid'> {
    return this.shell;
  }

  /** Starts the persistent shell; the provider calls this before handing the sandbox out. */
  async start(): Promise<void> {
    try {
      await this.guard('starting the shell', () => this.shell.ensureStarted());
      this.diskWatchdog?.start();
    } catch (err) {
      if (err instanceof ShellEndedError || err instanceof ShellUnresponsiveError) {
        throw new TbrlError(
          'SHELL_UNAVAILABLE',
          `Could not start bash in image ${this.info.image}${err.partialOutput.trim() ? `: ${err.partialOutput.trim()}` : ''}.`,
          'the sandbox needs bash in the image: add it to the Dockerfile (e.g. `RUN apt-get install -y bash` or `RUN apk add bash`).',
          { cause: err },
        );
      }
      throw err;
    }
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    this.assertOpen();
    try {
      const result = await this.shell.run(command, {
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes ?? this.limits.maxOutputBytes,
        background: options.background,
        traceMark: options.traceMark,
      });
      if (result.exitCode === 137 && !result.timedOut && !result.diskLimitExceeded) await this.noteOom(result);
      return this.withDiskNotice(result);
    } catch (err) {
      if (err instanceof ShellEndedError) return this.afterShellEnded(err);
      // The container stopped between commands (a background `kill -9 -1`), or under a shell this
      // sandbox does not own (the tracer's): start it again once and run the command there.
      const note = await this.reviveAfterKillAll();
      if (note) {
        const result = await this.exec(command, options);
        result.output = `${note}\n${result.output}`;
        return result;
      }
      throw await this.explain(err, 'running a command');
    }
  }

  /**
   * `kill -9 -1` by the agent kills the entrypoint, which stops the container (exit 137, not the
   * OOM killer). Its files are intact, so it is started again (at most MAX_REVIVALS times a
   * sandbox) and the next command gets a new shell in the last working directory. Returns the note
   * for the output, or undefined when the container did not stop that way or cannot be revived.
   */
  private async reviveAfterKillAll(): Promise<string | undefined> {
    const state = await this.container.inspect().catch(() => undefined);
    if (!state || state.State?.Running || state.State?.OOMKilled || state.State?.ExitCode !== 137) return undefined;
    if (this.revivals >= MAX_REVIVALS || this.closing) return undefined;
    this.revivals++;
    try {
      await this.container.start();
    } catch {
      return undefined;
    }
    return `[note: a command killed every process in the container (e.g. \`kill -9 -1\`), which stopped it; the container was started again (${this.revivals} of ${MAX_REVIVALS} times): files are kept, running processes and the shell's variables are not; commands run in ${this.shell.cwd ?? 'the working directory'}]`;
  }

  async execArgv(argv: string[], options: ExecOptions & { cwd?: string; env?: Record<string, string>; user?: string } = {}): Promise<ExecResult> {
    this.assertOpen();
    if (argv.length === 0) throw new SandboxFileError('execArgv', 'empty argv: pass the program and its arguments, e.g. ["pytest", "-q"]');
    const started = Date.now();
    const output = new CappedOutput(options.maxOutputBytes ?? this.limits.maxOutputBytes);
    // `echo $$; exec` tells us the program's pid inside the container, so a timeout can kill its tree;
    // 2>&1 keeps stdout and stderr in the order the program wrote them, as a terminal shows them.
    const cmd = ['/bin/sh', '-c', 'echo $$; exec "$@" 2>&1', 'tbrl-exec', ...argv];
    return this.guard('running a program', async () => {
      const exec = await this.container.exec({
        Cmd: cmd,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: options.cwd,
        ...(options.user !== undefined ? { User: options.user } : {}),
        Env: options.env ? Object.entries(options.env).map(([k, v]) => `${k}=${v}`) : undefined,
      });
      if (options.background) {
        // Detached: the daemon runs it on its own; nothing waits for or reads its output.
        // The daemon answers once the process started; drop the (empty) response so no socket lingers.
        const response = (await exec.start({ Detach: true })) as unknown as Duplex | undefined;
        response?.destroy?.();
        return { exitCode: 0, output: `[started in background: ${argv.join(' ')}]\n`, droppedBytes: 0, timedOut: false, durationMs: Date.now() - started };
      }
      const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
      let pid: number | undefined;
      let pidLine = Buffer.alloc(0);
      const demux = new DockerDemuxer((kind, payload) => {
        if (kind === 'stdout' && pid === undefined) {
          pidLine = Buffer.concat([pidLine, payload]);
          const nl = pidLine.indexOf(0x0a);
          if (nl < 0) return;
          pid = Number(pidLine.subarray(0, nl).toString());
          payload = pidLine.subarray(nl + 1);
        }
        output.push(payload);
      });
      stream.on('data', (c: Buffer) => demux.push(c));
      const ended = new Promise<void>((resolve) => {
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', () => resolve());
      });
      let timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      if (options.timeoutMs && options.timeoutMs > 0) {
        timer = setTimeout(() => {
          timedOut = true;
          if (pid) this.runAux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'tree', String(pid)]).catch(() => undefined);
          // If nothing could be killed (no bash in the image), stop waiting anyway.
          setTimeout(() => stream.destroy(), 5000).unref();
        }, options.timeoutMs);
      }
      await ended;
      clearTimeout(timer);
      const inspected = await exec.inspect().catch(() => undefined);
      const exitCode = timedOut ? null : inspected?.ExitCode ?? null;
      const result: ExecResult = {
        exitCode,
        output: output.text() + (timedOut ? `\n[killed after ${options.timeoutMs} ms timeout]\n` : ''),
        droppedBytes: output.droppedBytes,
        timedOut,
        durationMs: Date.now() - started,
      };
      if (exitCode === 137) await this.noteOom(result);
      if (exitCode === 126 || exitCode === 127) result.output += `[could not run ${argv[0]}: not found or not executable in the sandbox]\n`;
      return this.withDiskNotice(result);
    });
  }

  async readFile(path: string): Promise<Buffer> {
    this.assertOpen();
    return this.guard(`reading ${path}`, async () => {
      let current = path;
      for (let hop = 0; hop < 8; hop++) {
        let stream: Readable;
        try {
          stream = (await this.container.getArchive({ path: current })) as unknown as Readable;
        } catch (err) {
          if (statusCode(err) === 404 && !isNoSuchContainer(err)) throw new SandboxFileError(path, 'no such file in the sandbox', err);
          throw err;
        }
        const entries = await readTarEntries(stream);
        const first = entries[0];
        if (!first) throw new SandboxFileError(path, 'empty archive from the daemon');
        if (first.type === 'directory') throw new SandboxFileError(path, 'is a directory; list it with a command such as `ls -la`');
        if (first.type === 'symlink' && first.linkname) {
          current = posix.resolve(posix.dirname(current), first.linkname);
          continue;
        }
        return first.content;
      }
      throw new SandboxFileError(path, 'too many levels of symbolic links');
    });
  }

  async writeFile(path: string, content: Buffer | string, mode = 0o644): Promise<void> {
    this.assertOpen();
    const abs = posix.isAbsolute(path) ? path : posix.join(this.shell.cwd ?? '/', path);
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    await this.guard(`writing ${abs}`, async () => {
      await this.shell.ensureStarted();
      const owner = { uid: this.shell.uid, gid: this.shell.gid };
      try {
        // Owned by the image's USER (the daemon applies tar ownership), so a non-root agent can edit what it wrote.
        await this.container.putArchive(await singleFileTar(posix.basename(abs), data, mode, owner), { path: posix.dirname(abs) });
      } catch (err) {
        if (statusCode(err) !== 404 || isNoSuchContainer(err)) throw err;
        // The parent directory does not exist: extract at / with the full path so the daemon creates it.
        await this.container.putArchive(await singleFileTar(abs.replace(/^\/+/, ''), data, mode, owner), { path: '/' });
      }
    });
  }

  async putArchive(archive: Readable | Buffer, destDir: string): Promise<void> {
    this.assertOpen();
    await this.guard(`copying files to ${destDir}`, async () => {
      await this.container.putArchive(toReadable(archive), { path: destDir });
    });
  }

  async getArchive(path: string): Promise<Readable> {
    this.assertOpen();
    return this.guard(`reading ${path}`, async () => {
      try {
        return (await this.container.getArchive({ path })) as unknown as Readable;
      } catch (err) {
        if (statusCode(err) === 404 && !isNoSuchContainer(err)) throw new SandboxFileError(path, 'no such file or directory in the sandbox', err);
        throw err;
      }
    });
  }

  async checkpoint(step: number): Promise<Checkpoint> {
    this.assertOpen();
    const state = await this.guard('reading the shell state', () => this.shell.state());
    const tag = `step-${step}-${Date.now().toString(36)}`;
    const repo = `tbrl-checkpoint/${sanitizeRepo(this.runId)}`;
    const committed = await this.guard(`checkpointing step ${step}`, () =>
      this.container.commit({
        repo,
        tag,
        comment: `tbrl checkpoint of run ${this.runId} at step ${step}`,
        // Labels the container already carries (project/run/pid) are inherited; these mark it a checkpoint.
        changes: [`LABEL ${LABEL_KIND}=checkpoint`, `LABEL ${LABEL_STEP}=${step}`, `LABEL ${LABEL_RUN}=${this.runId}`, `LABEL ${LABEL_PROJECT}=tbrl`, `LABEL ${LABEL_PID}=${process.pid}`],
        pause: true,
      }),
    );
    const imageId = (committed as { Id?: string }).Id ?? `${repo}:${tag}`;
    return { imageId, runId: this.runId, step, createdAt: new Date().toISOString(), cwd: state.cwd, env: state.env };
  }

  /**
   * The agent's edits to a copied workspace as a git-format patch against the host folder (apply
   * with `git apply`). Empty in bind mode, where the edits already are the user's files.
   */
  async workspaceChanges(): Promise<string> {
    if (!this.workspace || this.workspace.mode !== 'copy') return '';
    return this.guard('reading the workspace', () => workspacePatch(this, this.workspace!.hostPath, this.workspace!.containerPath));
  }

  /**
   * A container made ahead of its run (an eval job's warm pool) takes the run's id: its checkpoints
   * are labelled with it. The container's own label keeps the pool's id (labels are fixed at create).
   */
  adoptRun(runId: string): void {
    this.runId = runId;
  }

  originalImage(): Promise<ImageRef> {
    return containerImage(this.docker, this.info.containerId, this.info.image);
  }

  originals(image: ImageRef, runId: string): OriginalSource {
    const fromImage = imageOriginals(this.docker, image, runId);
    return this.workspace ? workspaceOriginals(fromImage, this.workspace) : fromImage;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.diskWatchdog?.stop();
      this.shell.close();
      await this.container.remove({ force: true, v: true }).catch((err) => {
        if (statusCode(err) !== 404 && statusCode(err) !== 409) throw mapDockerError(err, 'removing the container', { target: this.target, connected: true });
      });
    })();
    return this.closing;
  }

  /** The shell process state, for a fork restoring it. */
  async restoreShellState(cwd: string, env: Record<string, string>): Promise<void> {
    const skip = new Set(['PWD', 'OLDPWD', 'SHLVL', '_', 'HOSTNAME', 'HOME']);
    const lines = Object.entries(env)
      .filter(([k]) => !skip.has(k) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      .map(([k, v]) => `export ${k}=${ansiQuoteForShell(v)}`);
    lines.push(`cd -- ${ansiQuoteForShell(cwd)}`);
    const r = await this.exec(lines.join('\n'), { timeoutMs: 30_000 });
    if (r.exitCode !== 0) throw new SandboxFileError(cwd, `could not restore the shell state of the checkpoint: ${r.output.trim()}`);
  }

  private assertOpen(): void {
    if (this.closing) throw new ContainerGoneError(this.info.containerId, 'the sandbox was closed');
  }

  private async spawnShell(cwd: string | undefined): Promise<{ stream: Duplex; exitCode: () => Promise<number | null> }> {
    const exec = await this.container.exec({
      // --posix: the frame shell does not source $BASH_ENV (see frameShellPrelude).
      Cmd: [this.frameBash, '--posix', '--noprofile', '--norc'],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      WorkingDir: cwd,
    });
    const stream = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
    return { stream, exitCode: async () => (await exec.inspect().catch(() => undefined))?.ExitCode ?? null };
  }


  /** The shell's stream ended mid-command: the agent typed `exit`, or the container/daemon is gone. */
  private async afterShellEnded(err: ShellEndedError): Promise<ExecResult> {
    let state = await this.container.inspect().catch((e) => e as Error);
    if (!(state instanceof Error) && state.State?.Running && (await err.exitCode()) === 137) {
      // SIGKILL of the shell may be part of `kill -9 -1`, whose container is still stopping: look again.
      await new Promise((r) => setTimeout(r, 500));
      state = await this.container.inspect().catch((e) => e as Error);
    }
    if (state instanceof Error) throw await this.explain(state, 'running a command');
    if (state.State?.OOMKilled) throw new ContainerOomError(this.info.containerId, this.limits.memoryBytes);
    if (!state.State?.Running) {
      // 137 without the OOM killer is SIGKILL from inside: the agent's command killed every process it could see.
      const revived = await this.reviveAfterKillAll();
      if (revived) {
        return { exitCode: (await err.exitCode()) ?? 137, output: `${err.partialOutput}\n${revived}\n`, droppedBytes: 0, timedOut: false, durationMs: 0 };
      }
      if (state.State?.ExitCode === 137) {
        throw new ContainerGoneError(
          this.info.containerId,
          "container exited with code 137: a command killed the container's main process (e.g. `kill -9 -1` kills every process the agent can see)",
          `the container was already started again ${MAX_REVIVALS} times; the steps so far are kept. Resume from a checkpoint, or end the instruction with a note not to kill every process.`,
        );
      }
      throw new ContainerGoneError(this.info.containerId, `container exited with code ${state.State?.ExitCode}`);
    }
    const code = await err.exitCode();
    const result: ExecResult = {
      exitCode: code,
      output: `${err.partialOutput}[the shell exited; the next command starts a new shell in ${this.shell.cwd ?? 'the working directory'} with the container's original environment]\n`,
      droppedBytes: 0,
      timedOut: false,
      durationMs: 0,
    };
    // The shell itself may be what the OOM killer picked (a huge variable in the shell).
    if (code === 137) await this.noteOom(result);
    return result;
  }

  /** Exit 137 without a timeout is SIGKILL: say so when the memory cgroup's OOM killer did it. */
  private async noteOom(result: ExecResult): Promise<void> {
    const r = await this.runAux(['/bin/sh', '-c', 'cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null']).catch(() => undefined);
    const m = r?.stdout.toString().match(/oom_kill (\d+)/);
    const kills = m ? Number(m[1]) : 0;
    // The counter is per container and cumulative: only a kill since the last look is this command's.
    const fresh = kills > this.oomKillsSeen;
    this.oomKillsSeen = Math.max(this.oomKillsSeen, kills);
    if (fresh) {
      result.oomKilled = true;
      result.output += `[killed by the out-of-memory killer: the sandbox memory limit is ${Math.round(this.limits.memoryBytes / 1024 ** 2)} MiB]\n`;
    }
  }

  /** Runs a Docker call, converting transport failures into the typed errors. */
  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw await this.explain(err, what);
    }
  }

  private async explain(err: unknown, what: string): Promise<Error> {
    const mapped = mapDockerError(err, what, { target: this.target, connected: true, containerId: this.info.containerId });
    if (mapped instanceof DockerDiedError || mapped instanceof ContainerGoneError) {
      // A container that vanished because the OOM killer took its init is reported as OOM.
      const state = await this.container.inspect().catch(() => undefined);
      if (state?.State?.OOMKilled) return new ContainerOomError(this.info.containerId, this.limits.memoryBytes);
    }
    return mapped;
  }
}

function ansiQuoteForShell(v: string): string {
  return `'${v.replace(/'/g, `'\\''`)}'`;
}

function sanitizeRepo(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[-._]+/, '').slice(0, 100) || 'run';
}
