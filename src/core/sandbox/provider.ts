import type Docker from 'dockerode';
import type { CagedBy, Checkpoint, Sandbox, SandboxInfo, SandboxLimits, SandboxProvider, SandboxSpec, SidecarSpec, Sidecars } from './types';
import { DEFAULT_LIMITS, LABEL_PID, LABEL_PROJECT, LABEL_RUN } from './types';
import { DockerSandbox, LABEL_KIND } from './docker-sandbox';
import { connectDocker, ensureDaemon, initAvailable, mapDockerError, type DockerConnection, type DockerConnectionOptions } from './docker-client';
import { ImageMissingError, statusCode } from './errors';
import { resolveImage, type ImageResolverOptions, type ResolvedImage } from './images';
import { gcSandboxes } from './gc';
import { startDockerSidecars } from './sidecars';
import { CAGE_DIR, cageAssets, cageMount } from './cage';
import { straceBundleMount } from './strace-volume';
import { TbrlError } from '../errors';

export const PROJECT_LABEL_VALUE = 'tbrl';

export interface DockerProviderOptions extends DockerConnectionOptions, ImageResolverOptions {}

/** Container plus everything `create` and `fork` share once the image is known. */
interface Launch {
  image: string;
  substitutedFrom?: string;
  workspaceMode?: 'copy' | 'bind';
  binds?: string[];
  mounts?: Docker.MountSettings[];
  env?: Record<string, string>;
  workdir?: string;
  hostConfig?: ResolvedImage['hostConfig'];
}

export class DockerSandboxProvider implements SandboxProvider {
  readonly connection: DockerConnection;
  /**
   * Whether the daemon enforces `StorageOpt.size` (overlay2 on xfs with pquota, btrfs, zfs…).
   * Learnt from the first create (the daemon refuses at create on other backends) and kept, so
   * later sandboxes neither retry nor pay for the refusal.
   */
  private storageOptSupported?: boolean;

  constructor(private readonly options: DockerProviderOptions = {}) {
    this.connection = connectDocker(options);
  }

  get docker(): Docker {
    return this.connection.docker;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    return this.createDocker(spec);
  }

  /** Like `create`, typed as the Docker sandbox (workspace patches, shell restoration). */
  async createDocker(spec: SandboxSpec): Promise<DockerSandbox> {
    spec.signal?.throwIfAborted();
    await ensureDaemon(this.connection);
    const resolved: ResolvedImage = await resolveImage(this.connection, spec, this.options);
    const sandbox = await this.launch(spec, {
      image: resolved.image,
      substitutedFrom: resolved.substitutedFrom,
      workspaceMode: resolved.workspace?.mode,
      binds: resolved.workspace?.mode === 'bind' ? [`${resolved.workspace.hostPath}:${resolved.workspace.containerPath}`] : undefined,
      mounts: resolved.mounts,
      env: { ...resolved.env, ...spec.env },
      workdir: spec.workdir ?? resolved.workdir,
      hostConfig: resolved.hostConfig,
    });
    sandbox.workspace = resolved.workspace;
    try {
      if (resolved.afterStart) await resolved.afterStart(sandbox);
    } catch (err) {
      await sandbox.close().catch(() => undefined);
      throw err;
    }
    return sandbox;
  }

  async fork(checkpoint: Checkpoint, spec: Omit<SandboxSpec, 'image'>): Promise<Sandbox> {
    await ensureDaemon(this.connection);
    const sandbox = await this.launch({ ...spec, image: { kind: 'image', image: checkpoint.imageId } }, {
      image: checkpoint.imageId,
      env: spec.env,
      workdir: checkpoint.cwd,
    });
    try {
      await sandbox.restoreShellState(checkpoint.cwd, checkpoint.env);
    } catch (err) {
      await sandbox.close().catch(() => undefined);
      throw err;
    }
    return sandbox;
  }

  /** Deletes a checkpoint image (runs that no longer need to resume or branch from it). */
  async removeCheckpoint(checkpoint: Checkpoint): Promise<void> {
    await this.docker.getImage(checkpoint.imageId).remove({ force: true }).catch((err) => {
      if (statusCode(err) !== 404) throw mapDockerError(err, 'removing a checkpoint image', { target: this.connection.target, connected: true });
    });
  }

  startSidecars(services: SidecarSpec[], options: { runId: string; internet: boolean; onProgress?: (line: string) => void; signal?: AbortSignal }): Promise<Sidecars> {
    return startDockerSidecars(this.connection, PROJECT_LABEL_VALUE, services, options);
  }

  gc(options: { all?: boolean } = {}): Promise<{ containers: number; images: number }> {
    return gcSandboxes(this.connection, options);
  }

  private async launch(spec: SandboxSpec, launch: Launch): Promise<DockerSandbox> {
    const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...spec.limits };
    if (!Number.isFinite(limits.diskBytes) || limits.diskBytes < 1024 ** 2) {
      // Below 1 MiB every shell start-up write would trip the watchdog: the sandbox could run nothing.
      throw new TbrlError(
        'BAD_SANDBOX_LIMIT',
        `limits.diskBytes must be a number of bytes of at least 1 MiB; got ${String(spec.limits?.diskBytes)}.`,
        'pass e.g. `limits: { diskBytes: 8 * 1024 ** 3 }` (8 GiB, the default), or leave it out.',
      );
    }
    const ctx = { target: this.connection.target, connected: true };
    let container: Docker.Container | undefined;
    let watchDisk = false;
    const authorCommand = await imageCommand(this.docker, launch.image);
    // The studio's own static programs, read-only: see cage.ts (an absent helper is said, never silent).
    const cage = await cageMount(this.docker, launch.image);
    const frameBash = cage.mount && cageAssets().files.some((f) => f.name === 'bash') ? `${CAGE_DIR}/bash` : undefined;
    // The tracer's strace, read-only as well (a restarted traced shell must not run a strace the agent replaced).
    const strace = await straceBundleMount(this.docker).catch(() => undefined);
    const studioMounts = [...(cage.mount ? [cage.mount] : []), ...(strace ? [strace.mount] : [])];
    const createWith = (storageOpt: boolean) => this.docker.createContainer({
      Image: launch.image,
      // The image's own ENTRYPOINT and CMD run as the author built them (a service, an /etc/hosts
      // edit); the wrapper keeps the container alive when they exit, and the agent's shell is a separate exec.
      ...keepAliveEntrypoint(authorCommand),
      Env: Object.entries(launch.env ?? {}).map(([k, v]) => `${k}=${v}`),
      WorkingDir: launch.workdir,
      ...(spec.user !== undefined ? { User: spec.user } : {}),
      Labels: {
        [LABEL_PROJECT]: PROJECT_LABEL_VALUE,
        [LABEL_RUN]: spec.runId,
        [LABEL_PID]: String(process.pid),
        // Containers started from a checkpoint image would otherwise inherit its kind label.
        [LABEL_KIND]: 'sandbox',
      },
      HostConfig: {
        Memory: limits.memoryBytes,
        // Equal to Memory: no swap, so the OOM killer acts at the limit instead of the host swapping.
        MemorySwap: limits.memoryBytes,
        NanoCpus: Math.round(limits.cpus * 1e9),
        PidsLimit: limits.pids,
        SecurityOpt: ['no-new-privileges', ...(launch.hostConfig?.SecurityOpt ?? [])],
        ...(launch.hostConfig?.Privileged ? { Privileged: true } : {}),
        ...(launch.hostConfig?.CapAdd ? { CapAdd: launch.hostConfig.CapAdd } : {}),
        NetworkMode: spec.networkName ?? (spec.network ? 'bridge' : 'none'),
        Init: initAvailable(this.connection),
        Binds: launch.binds,
        Mounts: studioMounts.length ? [...(launch.mounts ?? []), ...studioMounts] : launch.mounts,
        StorageOpt: storageOpt ? { size: String(limits.diskBytes) } : undefined,
      },
    });
    try {
      if (this.storageOptSupported !== false) {
        try {
          container = await createWith(true);
          this.storageOptSupported = true;
        } catch (err) {
          if (!isStorageOptRefusal(err)) throw err;
          this.storageOptSupported = false;
        }
      }
      if (!container) {
        container = await createWith(false);
        watchDisk = true;
      }
    } catch (err) {
      if (statusCode(err) === 404 && /no such image/i.test((err as Error).message)) throw new ImageMissingError(launch.image, err);
      throw mapDockerError(err, 'creating the container', ctx);
    }
    if (spec.signal?.aborted) {
      await container.remove({ force: true }).catch(() => undefined);
      spec.signal.throwIfAborted();
    }
    const info: SandboxInfo = {
      containerId: container.id,
      image: launch.image,
      substitutedFrom: launch.substitutedFrom,
      workspaceMode: launch.workspaceMode,
      tracing: { available: false, reason: 'syscall tracing is provided by the tracing module, not the sandbox' },
      ...(strace ? { straceBundle: strace.volume } : {}),
    };
    const sandbox = new DockerSandbox({
      docker: this.docker,
      container,
      info,
      limits,
      runId: spec.runId,
      target: this.connection.target,
      workdir: launch.workdir,
      watchDisk,
      frameBash,
    });
    try {
      await container.start();
      await sandbox.start();
    } catch (err) {
      await container.remove({ force: true }).catch(() => undefined);
      throw mapDockerError(err, 'starting the container', { ...ctx, containerId: container.id });
    }
    const shell = sandbox.frameShell;
    const by: CagedBy = shell.cagedBy ?? (shell.uid !== 0 && frameBash ? 'nondumpable' : 'none');
    const why = by === 'helper' || by === 'nondumpable' ? cage.info.note
      : by === 'setpriv' ? `the studio's helper is not mounted (${cage.info.note ?? `the frame shell found no read-only mount at ${CAGE_DIR}: does the image make it a link?`}); commands are caged by the image's setpriv, which a command can replace with a program that reads the frame nonce`
        : `the agent's commands run uncaged and can read the frame shell's memory (the frame nonce): ${cage.info.note ?? (shell.uid !== 0 ? 'the image user is not root, so no capability separates the commands from the frame shell' : 'no capability could be dropped')}`;
    info.cage = { by, ...(shell.cage ? { capability: shell.cage } : {}), ...(why ? { note: why } : {}), ...(frameBash ? { frameShell: frameBash } : {}) };
    const note = await entrypointNote(container, authorCommand);
    if (note) {
      info.entrypointNote = note;
      spec.onProgress?.(note);
    }
    return sandbox;
  }
}

/** argv[0] of the keep-alive wrapper: marks it in `ps` and lets a checkpoint image's command be unwrapped. */
export const ENTRYPOINT_WRAPPER = 'tbrl-entrypoint';
const EXIT_MARKER = '[tbrl] the image entrypoint exited with code';
// Runs the author's command in the foreground; when it returns, says so on stderr (the container
// log) and keeps PID 1's child alive so the shell can still attach.
const WRAPPER_SCRIPT = `[ "$#" -eq 0 ] || { "$@"; echo "${EXIT_MARKER} $?" >&2; }; exec sleep infinity`;

/** ENTRYPOINT + CMD of an image, with an earlier keep-alive wrapper (a checkpoint image's) taken off. */
export async function imageCommand(docker: Docker, image: string): Promise<string[]> {
  const config = (await docker.getImage(image).inspect().catch(() => undefined))?.Config;
  const argv = [...(config?.Entrypoint ?? []), ...(config?.Cmd ?? [])];
  return argv[0] === '/bin/sh' && argv[1] === '-c' && argv[3] === ENTRYPOINT_WRAPPER ? argv.slice(4) : argv;
}

export function keepAliveEntrypoint(command: string[]): { Entrypoint: string[]; Cmd: string[] } {
  return { Entrypoint: ['/bin/sh', '-c', WRAPPER_SCRIPT, ENTRYPOINT_WRAPPER, ...command], Cmd: [] };
}

/**
 * A note when the image's command already exited by the time the shell started. Shells and
 * interpreters (CMD ["bash"], ["python3"]) exit at once without a terminal, which is expected and
 * said only when the exit code was not 0.
 */
async function entrypointNote(container: Docker.Container, command: string[]): Promise<string | undefined> {
  if (command.length === 0) return undefined;
  const raw = await container.logs({ stdout: false, stderr: true, tail: 50 }).catch(() => undefined);
  const text = raw ? demuxText(raw as unknown as Buffer) : '';
  const m = new RegExp(`${EXIT_MARKER.replace(/[[\]]/g, '\\$&')} (\\d+)`).exec(text);
  if (!m) return undefined;
  const code = Number(m[1]);
  if (code === 0 && INTERACTIVE.test(command[command.length - 1])) return undefined;
  return `The image's entrypoint \`${command.join(' ').slice(0, 160)}\` exited with code ${code}; the container is kept running so the agent's shell still works, but whatever it was to start is not running.`;
}

const INTERACTIVE = /(^|\/)(ba|da|z|)sh$|(^|\/)python[0-9.]*$|(^|\/)node$|(^|\/)irb$/;

/** Container log frames (8-byte headers when there is no TTY) as text. */
function demuxText(buf: Buffer): string {
  if (!Buffer.isBuffer(buf)) return String(buf ?? '');
  const parts: string[] = [];
  let i = 0;
  while (i + 8 <= buf.length && (buf[i] === 1 || buf[i] === 2) && buf[i + 1] === 0) {
    const len = buf.readUInt32BE(i + 4);
    parts.push(buf.subarray(i + 8, i + 8 + len).toString('utf8'));
    i += 8 + len;
  }
  return i === 0 ? buf.toString('utf8') : parts.join('');
}

/** The daemon's answer to `StorageOpt` on a backend without quotas (e.g. overlay2 on ext4). */
function isStorageOptRefusal(err: unknown): boolean {
  return /storage-?opt|storage option|pquota|quota/i.test(String((err as Error)?.message ?? err));
}

export function createDockerProvider(options: DockerProviderOptions = {}): DockerSandboxProvider {
  return new DockerSandboxProvider(options);
}
