import { TbrlError } from '../errors';

/**
 * Typed sandbox failures. Each names what went wrong and what the user can do, so the CLI, the
 * editor and the trajectory footer can show it without a stack trace.
 */
export class DockerUnavailableError extends TbrlError {
  constructor(readonly target: string, cause?: unknown) {
    super(
      'DOCKER_UNAVAILABLE',
      `Cannot reach the Docker daemon at ${target} (${causeText(cause)}).`,
      'start Docker: `sudo dockerd` (or start Docker Desktop) / set tbrl.docker.socketPath / DOCKER_HOST to the daemon socket, e.g. DOCKER_HOST=unix:///var/run/docker.sock',
      { cause },
    );
  }
}

export class DockerDiedError extends TbrlError {
  constructor(what: string, cause?: unknown) {
    super(
      'DOCKER_DIED',
      `The Docker daemon stopped answering while ${what} (${causeText(cause)}). Steps already written to the trajectory are kept.`,
      'restart the daemon (`sudo dockerd` / restart Docker Desktop), then resume the run from its last checkpoint.',
      { cause },
    );
  }
}

export class ImageMissingError extends TbrlError {
  constructor(readonly image: string, cause?: unknown) {
    super(
      'IMAGE_MISSING',
      `Image ${image} is not present locally and could not be pulled.`,
      `build or load it (\`docker build -t ${image} .\` / \`docker load\`), or map it to a local stand-in in tbrl.sandbox.baseImageMap / TBRL_BASE_IMAGE_MAP, e.g. {"${image}": "debian:bookworm-slim"}.`,
      { cause },
    );
  }
}

export class ImageBuildError extends TbrlError {
  constructor(
    readonly step: string | undefined,
    readonly logTail: string,
    cause?: unknown,
  ) {
    super(
      'IMAGE_BUILD_FAILED',
      `Image build failed${step ? ` at ${step}` : ''}.\n--- last build output ---\n${logTail}`,
      'fix the failing Dockerfile instruction above (a missing package, a typo in a command, a file missing from the build context) and run again.',
      { cause },
    );
  }
}

export class ContainerOomError extends TbrlError {
  constructor(readonly containerId: string, memoryBytes: number) {
    super(
      'CONTAINER_OOM',
      `Container ${containerId.slice(0, 12)} was killed by the out-of-memory killer (memory limit ${Math.round(memoryBytes / 1024 ** 2)} MiB).`,
      'raise the sandbox memory limit (SandboxSpec.limits.memoryBytes) or make the task use less memory.',
    );
  }
}

export class DiskFullError extends TbrlError {
  constructor(what: string, cause?: unknown) {
    super(
      'DISK_FULL',
      `No space left on device while ${what}. Files written before this point are kept.`,
      'free disk space (`tbrl gc --all`, `docker system prune`) and retry.',
      { cause },
    );
  }
}

export class ContainerGoneError extends TbrlError {
  constructor(readonly containerId: string, detail?: string, fix?: string) {
    super(
      'CONTAINER_GONE',
      `Container ${containerId.slice(0, 12)} no longer exists or stopped${detail ? ` (${detail})` : ''}.`,
      fix ?? 'something removed or stopped it (`docker rm`, `tbrl gc --all`, a daemon restart); resume the run from its last checkpoint.',
    );
  }
}

/** The daemon answered but said no (a bad archive, an invalid option): its own words, typed. */
export class DockerRefusedError extends TbrlError {
  // `statusCode` keeps the daemon's status visible to statusCode() checks downstream.
  constructor(what: string, readonly statusCode: number, daemonText: string, cause?: unknown) {
    super('DOCKER_REFUSED', `The Docker daemon refused ${what} (HTTP ${statusCode}): ${daemonText}`, 'the daemon\'s message above names the problem; for archives, entries must be relative paths without "..".', { cause });
  }
}

export class SandboxFileError extends TbrlError {
  constructor(readonly path: string, detail: string, cause?: unknown) {
    super('SANDBOX_FILE', `${path}: ${detail}`, 'check the path inside the sandbox (absolute paths work best).', { cause });
  }
}

export class DevcontainerError extends TbrlError {
  constructor(readonly configPath: string, detail: string, example?: string) {
    super(
      'DEVCONTAINER_INVALID',
      `${configPath}: ${detail}`,
      example ? `correct the file, e.g.\n${example}` : 'correct the file (it is JSON with comments).',
    );
  }
}

function causeText(cause: unknown): string {
  if (!cause) return 'no detail';
  const e = cause as { code?: string; message?: string };
  return [e.code, e.message].filter(Boolean).join(': ') || String(cause);
}

const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ETIMEDOUT']);

/** True when an error means the daemon socket is not there / not answering (not a Docker-level refusal). */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return typeof code === 'string' && UNREACHABLE_CODES.has(code);
}

export function isNoSpaceError(err: unknown): boolean {
  const e = err as { code?: string; message?: string; json?: { message?: string } } | undefined;
  if (e?.code === 'ENOSPC') return true;
  const text = `${e?.message ?? ''} ${e?.json?.message ?? ''}`;
  return /no space left on device/i.test(text);
}

/** The daemon's own message (dockerode prefixes it with a generic text per status code). */
export function daemonMessage(err: unknown): string {
  const e = err as { json?: { message?: string } | string; message?: string } | undefined;
  if (e?.json && typeof e.json === 'object' && e.json.message) return e.json.message;
  return e?.message ?? String(err);
}

/** 404 because the container is gone (not because a path inside it is missing). */
export function isNoSuchContainer(err: unknown): boolean {
  return statusCode(err) === 404 && /no such container:/i.test(daemonMessage(err));
}

export function statusCode(err: unknown): number | undefined {
  const s = (err as { statusCode?: number } | undefined)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}
