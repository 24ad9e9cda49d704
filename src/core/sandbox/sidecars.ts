import type Docker from 'dockerode';
import { TbrlError, errorMessage } from '../errors';
import type { SidecarSpec, Sidecars } from './types';
import { LABEL_KIND, LABEL_PID, LABEL_PROJECT, LABEL_RUN } from './types';
import type { DockerConnection } from './docker-client';
import { resolveImage } from './images';

/** Starts compose services besides `main` on a network of the run's own, reachable by service name; waits for their healthchecks. */
export async function startDockerSidecars(connection: DockerConnection, projectLabel: string, services: SidecarSpec[], o: { runId: string; internet: boolean; onProgress?: (line: string) => void; signal?: AbortSignal }): Promise<Sidecars> {
  const docker = connection.docker;
  const labels = { [LABEL_PROJECT]: projectLabel, [LABEL_RUN]: o.runId, [LABEL_PID]: String(process.pid), [LABEL_KIND]: 'sidecar' };
  const name = `tbrl-${o.runId}`.slice(0, 60);
  // Internal: the services reach each other, nothing reaches the internet (no-network tasks).
  const network = await docker.createNetwork({ Name: name, Driver: 'bridge', Internal: !o.internet, Labels: labels, CheckDuplicate: true });
  const containers: Docker.Container[] = [];
  const close = async () => {
    for (const c of containers) await c.remove({ force: true }).catch(() => undefined);
    await network.remove().catch(() => undefined);
  };
  try {
    for (const s of services) {
      o.onProgress?.(`starting sidecar ${s.name}`);
      const resolved = await resolveImage(connection, { image: s.image, runId: o.runId, onProgress: o.onProgress, signal: o.signal }, {});
      const hc = s.healthcheck;
      const container = await docker.createContainer({
        Image: resolved.image,
        Labels: labels,
        Env: Object.entries(s.env).map(([k, v]) => `${k}=${v}`),
        ...(s.command ? { Cmd: s.command } : {}),
        ...(s.entrypoint ? { Entrypoint: s.entrypoint } : {}),
        ...(hc ? { Healthcheck: { Test: hc.test, Interval: hc.intervalSec * 1e9, Timeout: hc.timeoutSec * 1e9, Retries: hc.retries, StartPeriod: hc.startPeriodSec * 1e9 } } : {}),
        HostConfig: { NetworkMode: name, SecurityOpt: ['no-new-privileges'], Memory: 1024 ** 3, PidsLimit: 512 },
        NetworkingConfig: { EndpointsConfig: { [name]: { Aliases: [s.name] } } },
      });
      containers.push(container);
      await container.start();
    }
    for (const [i, s] of services.entries()) {
      if (s.healthcheck) await waitSidecarHealthy(containers[i], s, o.signal);
    }
  } catch (err) {
    await close();
    if (err instanceof TbrlError) throw err;
    throw new TbrlError('SIDECAR_FAILED', `a compose sidecar of the task could not be started: ${errorMessage(err)}`, 'Check environment/docker-compose.yaml (image or build of each service) and that its images build here.', { cause: err });
  }
  return { network: name, close };
}

async function waitSidecarHealthy(container: Docker.Container, s: SidecarSpec, signal?: AbortSignal): Promise<void> {
  const hc = s.healthcheck!;
  const deadline = Date.now() + (hc.startPeriodSec + (hc.intervalSec + hc.timeoutSec) * (hc.retries + 1)) * 1000 + 10_000;
  for (;;) {
    signal?.throwIfAborted();
    const state = (await container.inspect()).State;
    if (!state.Running) throw new TbrlError('SIDECAR_FAILED', `compose sidecar '${s.name}' exited with code ${state.ExitCode} before it became healthy`, 'Check the service\'s command and image (`docker logs` of a manual run shows why it stops).');
    const status = state.Health?.Status;
    if (status === 'healthy') return;
    if (status === 'unhealthy' || Date.now() > deadline) {
      const log = state.Health?.Log?.at(-1)?.Output?.trim().slice(0, 200) ?? '';
      throw new TbrlError('SIDECAR_FAILED', `compose sidecar '${s.name}' did not become healthy (${status ?? 'no status'}${log ? `: ${log}` : ''})`, 'Check the service\'s healthcheck test in environment/docker-compose.yaml.');
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
