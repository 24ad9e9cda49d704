import type { Readable } from 'node:stream';
import type { CommandTrace } from '../trace/types';
import type { OriginalSource } from '../attribution/originals';

/** Where a sandbox's image comes from. */
export type ImageSource =
  | { kind: 'image'; image: string }
  /** Build `dockerfile` (path relative to `context`) with build args. */
  | { kind: 'dockerfile'; context: string; dockerfile: string; buildArgs?: Record<string, string> }
  /** A `.devcontainer/devcontainer.json` (JSONC) of a workspace folder. */
  | { kind: 'devcontainer'; workspaceFolder: string; configPath?: string; allowPrivileges?: string[] };

export interface SandboxLimits {
  memoryBytes: number;
  cpus: number;
  pids: number;
  /** Bytes of output kept per command (head and tail halves); the rest is dropped and counted. */
  maxOutputBytes: number;
  /**
   * Bytes the container may write to its own filesystem (its writable layer; tmpfs and bind
   * mounts are not counted). Enforced by the storage driver where it can (`--storage-opt size`,
   * overlay2 on xfs with pquota); elsewhere a watchdog polls the layer size every 2 s and stops
   * the writers, so a filler may overshoot by what it writes between two polls.
   */
  diskBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  memoryBytes: 2 * 1024 ** 3,
  cpus: 1,
  pids: 512,
  maxOutputBytes: 64 * 1024,
  diskBytes: 8 * 1024 ** 3,
};

export interface SandboxSpec {
  image: ImageSource;
  /** Run id, written as a container label so `tbrl gc` and the reaper find containers of dead runs. */
  runId: string;
  limits?: Partial<SandboxLimits>;
  /** Network is off unless the task allows internet. */
  network?: boolean;
  env?: Record<string, string>;
  workdir?: string;
  /** User (name or uid) the container and its shell run as; undefined: the image's USER. */
  user?: string;
  /** A network of the task's own (sidecars live on it) instead of the default bridge / none. */
  networkName?: string;
  /** Workspace mode (devcontainer): copy (default; the user's files are never written) or bind mount (opt-in). */
  workspace?: { hostPath: string; containerPath: string; mode: 'copy' | 'bind' };
  /** Build progress lines (image builds can take minutes). */
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ExecOptions {
  /** Kill the command's process group after this long; the shell stays usable. */
  timeoutMs?: number;
  /** Override the per-command output cap. */
  maxOutputBytes?: number;
  /** `block: false` in the action language: start it in the background and return at once. */
  background?: boolean;
  /** Record reads/writes/ports/processes for this command (DepGPO); ignored when tracing is unavailable. */
  trace?: boolean;
  /**
   * Internal (the traced sandbox): the frame shell opens this command's trace markers itself, around
   * the command's process (shell.ts ShellRunOptions.traceMark).
   */
  traceMark?: number;
}

export interface ExecResult {
  /** null when the command was killed by the timeout. */
  exitCode: number | null;
  /** stdout and stderr interleaved as the terminal would show them, capped (head + marker + tail). */
  output: string;
  /** Bytes dropped from the middle by the cap (0 when nothing was dropped). */
  droppedBytes: number;
  timedOut: boolean;
  durationMs: number;
  trace?: CommandTrace;
  /** Set when the memory cgroup's OOM killer killed the command (exit 137 without a timeout). */
  oomKilled?: boolean;
  /** Set when the disk watchdog stopped this command (or, between commands, background writers) over `limits.diskBytes`. */
  diskLimitExceeded?: true;
}

export interface Checkpoint {
  /** Image id of the committed container state. */
  imageId: string;
  runId: string;
  step: number;
  createdAt: string;
  /** Shell state that a container commit does not carry (cwd, exported environment). */
  cwd: string;
  env: Record<string, string>;
}

/**
 * `helper`: commands run without a capability the frame shell keeps, dropped by the studio's static
 * helper; `nondumpable`: commands run as the image's non-root user and the frame shell is the
 * studio's execute-only static bash, which the kernel marks non-dumpable; `setpriv`: the image's
 * own setpriv drops the capability (a command can replace it); `none`: nothing separates them.
 */
export type CagedBy = 'helper' | 'nondumpable' | 'setpriv' | 'none';

export interface SandboxInfo {
  containerId: string;
  image: string;
  /** The image the task asked for when a stand-in replaced it (base-image substitution). */
  substitutedFrom?: string;
  workspaceMode?: 'copy' | 'bind';
  tracing: { available: boolean; method?: string; reason?: string };
  /** Set when the image's own ENTRYPOINT/CMD exited before the shell started (it is kept running regardless). */
  entrypointNote?: string;
  /**
   * How the agent's commands are kept from the frame shell (its frame nonce): `helper`, the
   * studio's static program on a read-only mount; `setpriv`, the image's own (a command can
   * replace it); `none`. `capability`: the one the commands lack. `note`: why it is weaker.
   * `frameShell`: the studio's static bash on the read-only mount, for any other frame shell
   * started in this container (the traced one) to use instead of the image's.
   */
  cage?: { by: CagedBy; capability?: string; note?: string; frameShell?: string };
  /**
   * The read-only volume holding the tracer's strace at /.tbrl-strace (sandbox/strace-volume.ts);
   * absent where the tracer image was missing when the container was created (the traced sandbox
   * then copies the bundle in).
   */
  straceBundle?: string;
}

/** One running container with a persistent shell. Every agent step, test run and verifier run goes through one. */
export interface Sandbox {
  readonly info: SandboxInfo;
  /** Run a command in the persistent shell: cwd and exported env persist between calls. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Run a program directly (not through the persistent shell), e.g. a test runner; same caps and timeouts. */
  execArgv(argv: string[], options?: ExecOptions & { cwd?: string; env?: Record<string, string>; user?: string }): Promise<ExecResult>;
  /** File primitives: no shell quoting, any bytes. Offset/limit are in lines (1-based offset). */
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, content: Buffer | string, mode?: number): Promise<void>;
  putArchive(tar: Readable | Buffer, destDir: string): Promise<void>;
  getArchive(path: string): Promise<Readable>;
  /** Snapshot the container at a step (commit) so a run can be resumed or forked. */
  checkpoint(step: number): Promise<Checkpoint>;
  /** Stop and remove the container. Idempotent. */
  close(): Promise<void>;
  /** The image this container was created from: its name and, when the daemon answers, the exact image id. */
  originalImage(): Promise<ImageRef>;
  /**
   * What paths held before the run, for the editor's diff of the agent's changes: read from `image`
   * (the root run's: a fork's own image is a checkpoint) and, for a workspace copied in from the
   * host, from the host folder. Nothing is created until the first read; `close()` removes it.
   */
  originals(image: ImageRef, runId: string): OriginalSource;
}

/** An image by the name a run used and, when known, its exact id. */
export interface ImageRef {
  name: string;
  id?: string;
}

/** Compose services a task starts beside its sandbox, on a network of the run's own. */
export interface SidecarSpec {
  name: string;
  image: ImageSource;
  /** Already resolved (no `${VAR}` templates left). */
  env: Record<string, string>;
  command?: string[];
  entrypoint?: string[];
  healthcheck?: { test: string[]; intervalSec: number; timeoutSec: number; retries: number; startPeriodSec: number };
}

export interface Sidecars {
  /** The network the sandbox joins (`SandboxSpec.networkName`) to reach them by service name. */
  network: string;
  close(): Promise<void>;
}

export interface SandboxProvider {
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** A new container from a checkpoint, with its shell state restored. */
  fork(checkpoint: Checkpoint, spec: Omit<SandboxSpec, 'image'>): Promise<Sandbox>;
  /** Remove containers (and checkpoint images) of runs whose process is gone, or all with `all`. */
  gc(options?: { all?: boolean }): Promise<{ containers: number; images: number }>;
  /** Deletes a checkpoint image once nothing needs to resume or branch from it. */
  removeCheckpoint(checkpoint: Checkpoint): Promise<void>;
  /** Starts sidecar services and waits for their healthchecks; absent where the provider cannot. */
  startSidecars?(services: SidecarSpec[], options: { runId: string; internet: boolean; onProgress?: (line: string) => void; signal?: AbortSignal }): Promise<Sidecars>;
}

/** Labels on everything the project creates, so leaks are findable. */
export const LABEL_PROJECT = 'dev.tbrl.project';
export const LABEL_RUN = 'dev.tbrl.run';
export const LABEL_PID = 'dev.tbrl.pid';
/** Label on checkpoint images (and originals containers, sidecars) so gc and the leak check can tell them apart. */
export const LABEL_KIND = 'dev.tbrl.kind';
export const LABEL_STEP = 'dev.tbrl.step';
