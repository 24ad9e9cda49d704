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
    /** `python:3.13-slim -> tbrl-standin/python:3` when a stand-in replaced a base image. */
    readonly substitution?: string,
  ) {
    super(
      'IMAGE_BUILD_FAILED',
      `Image build failed${step ? ` at ${step}` : ''}.${substitution ? ` The build ran on a stand-in base image (${substitution}), not the image the Dockerfile names.` : ''}\n--- last build output ---\n${logTail}`,
      substitution
        ? 'fix the failing Dockerfile instruction above; if it needs something the official image has and the stand-in lacks, add it to the stand-in\'s recipe (sandbox/images/*.Dockerfile) or map the image elsewhere in tbrl.sandbox.baseImageMap / TBRL_BASE_IMAGE_MAP.'
        : 'fix the failing Dockerfile instruction above (a missing package, a typo in a command, a file missing from the build context) and run again.',
      { cause },
    );
  }
}

/** A FROM image that is neither local, pullable, nor in the base-image map: nothing to build on. */
export class BaseImageUnavailableError extends TbrlError {
  constructor(readonly image: string, where: string, substitutionOff = false) {
    super(
      'BASE_IMAGE_UNAVAILABLE',
      `The base image ${image} (FROM at ${where}) is not present locally, could not be pulled from its registry, and ${substitutionOff ? 'base-image substitution is off' : 'the base-image map has no stand-in for it'}.`,
      `map it to a local image in tbrl.sandbox.baseImageMap (or the JSON file TBRL_BASE_IMAGE_MAP names), e.g. {"${image.split(':')[0]}*": "tbrl-standin/python:3"}; the built-in map is sandbox/images.json. Or load the image: \`docker load -i image.tar\` / \`docker pull ${image}\` where a registry is reachable.`,
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
    super('DOCKER_REFUSED', `The Docker daemon refused ${what} (HTTP ${statusCode}): ${daemonText}`, /build/i.test(what)
      ? 'the daemon\'s message above names the Dockerfile line it refused: fix that instruction (a Dockerfile parse error usually means syntax this engine\'s builder does not know).'
      : 'the daemon\'s message above names the problem; if it is about a path, check that it exists in the container and is writable.', { cause });
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
