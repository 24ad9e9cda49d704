import { existsSync } from 'node:fs';
import Docker from 'dockerode';
import {
  ContainerGoneError,
  DiskFullError,
  DockerDiedError,
  DockerRefusedError,
  DockerUnavailableError,
  isConnectionError,
  isNoSpaceError,
  isNoSuchContainer,
  daemonMessage,
  statusCode,
} from './errors';
import { TbrlError } from '../errors';

export interface DockerConnectionOptions {
  /** Unix socket path (tbrl.docker.socketPath). Empty: DOCKER_HOST, then /var/run/docker.sock. */
  socketPath?: string;
  /** A preconfigured client (tests, remote daemons). */
  docker?: Docker;
}

export interface DockerConnection {
  docker: Docker;
  /** Human-readable daemon address for error messages. */
  target: string;
  local: boolean;
}

export function connectDocker(options: DockerConnectionOptions = {}): DockerConnection {
  if (options.docker) return { docker: options.docker, target: 'the configured Docker client', local: true };
  if (options.socketPath) {
    return { docker: new Docker({ socketPath: options.socketPath }), target: options.socketPath, local: true };
  }
  const host = process.env.DOCKER_HOST;
  if (host) {
    // dockerode reads DOCKER_HOST itself (unix://, tcp://, with TLS variables).
    return { docker: new Docker(), target: host, local: host.startsWith('unix://') };
  }
  return { docker: new Docker({ socketPath: '/var/run/docker.sock' }), target: '/var/run/docker.sock', local: true };
}

/** Pings the daemon, turning "no socket" into the typed error that tells the user how to start Docker. */
export async function ensureDaemon(conn: DockerConnection): Promise<void> {
  try {
    await conn.docker.ping();
  } catch (err) {
    throw new DockerUnavailableError(conn.target, err);
  }
}

/**
 * Maps a dockerode failure during `what` to a typed error. `connected` says whether the daemon was
 * reachable earlier in this run: a connection failure then means it died, not that it is absent.
 */
export function mapDockerError(err: unknown, what: string, ctx: { target: string; connected: boolean; containerId?: string }): Error {
  if (err instanceof TbrlError) return err;
  if (isConnectionError(err)) return ctx.connected ? new DockerDiedError(what, err) : new DockerUnavailableError(ctx.target, err);
  if (isNoSpaceError(err)) return new DiskFullError(what, err);
  const message = daemonMessage(err);
  if (ctx.containerId && isNoSuchContainer(err)) return new ContainerGoneError(ctx.containerId, message);
  if (ctx.containerId && statusCode(err) === 409 && /not running|is paused|is restarting/i.test(message)) return new ContainerGoneError(ctx.containerId, message);
  const status = statusCode(err);
  if (status !== undefined) return new DockerRefusedError(what, status, message, err);
  return err instanceof Error ? err : new Error(message);
}

const INIT_PATHS = ['/usr/bin/docker-init', '/usr/libexec/docker/docker-init', '/usr/local/bin/docker-init', '/usr/sbin/docker-init'];

/**
 * Whether `HostConfig.Init` can be used: an init reaps zombies and forwards signals. A daemon on
 * this machine needs docker-init on disk; a remote daemon (Docker Desktop) ships it.
 */
export function initAvailable(conn: DockerConnection): boolean {
  if (!conn.local) return true;
  return INIT_PATHS.some((p) => existsSync(p));
}
