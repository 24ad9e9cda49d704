import type { DockerConnection } from './docker-client';
import { ensureDaemon, mapDockerError } from './docker-client';
import { LABEL_PID, LABEL_PROJECT } from './types';
import { statusCode } from './errors';

const LABEL_KIND = 'dev.tbrl.kind';
/** On the cage's volumes and the containers that fill them (cage.ts). */
export const LABEL_CAGE = 'dev.tbrl.cage';

/** Whether the process that created a container still runs (on this machine). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes containers and checkpoint images of runs whose process is gone (or all of them with
 * `all`). Task images built from Dockerfiles are a cache keyed by content and are kept.
 */
export async function gcSandboxes(conn: DockerConnection, options: { all?: boolean } = {}): Promise<{ containers: number; images: number }> {
  await ensureDaemon(conn);
  const ctx = { target: conn.target, connected: true };
  const dead = (labels: Record<string, string> | undefined) => options.all || !processAlive(Number(labels?.[LABEL_PID]));
  let containers = 0;
  let images = 0;
  try {
    const list = await conn.docker.listContainers({ all: true, filters: { label: [LABEL_PROJECT] } });
    for (const c of list) {
      if (!dead(c.Labels)) continue;
      await conn.docker.getContainer(c.Id).remove({ force: true, v: true }).then(
        () => containers++,
        (err) => { if (statusCode(err) !== 404) throw err; },
      );
    }
    const imgs = await conn.docker.listImages({ all: true, filters: { label: [`${LABEL_KIND}=checkpoint`] } });
    for (const img of imgs) {
      if (!dead(img.Labels)) continue;
      await conn.docker.getImage(img.Id).remove({ force: true }).then(
        () => images++,
        // 409: a live container (of another run) still uses it; it goes with that run.
        (err) => { if (statusCode(err) !== 404 && statusCode(err) !== 409) throw err; },
      );
    }
    // Networks of Harbor sidecars (src/core/run/task-sandbox.ts): gone once their containers are.
    for (const n of await conn.docker.listNetworks({ filters: { label: [LABEL_PROJECT] } })) {
      if (dead(n.Labels)) await conn.docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
    // The cage's fillers (never started; left only by a process that died while filling) and, with
    // `all`, its volumes (cage.ts): one per helper version; an in-use one (409) stays.
    for (const c of await conn.docker.listContainers({ all: true, filters: { label: [LABEL_CAGE] } })) {
      // A filler lives for well under a second; a younger one may be another process's, filling now.
      if (Date.now() / 1000 - c.Created > 60) await conn.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    if (options.all) {
      for (const v of (await conn.docker.listVolumes({ filters: { label: [LABEL_CAGE] } })).Volumes ?? []) {
        await conn.docker.getVolume(v.Name).remove().catch(() => undefined);
      }
    }
  } catch (err) {
    throw mapDockerError(err, 'collecting leftover sandboxes', ctx);
  }
  return { containers, images };
}

/**
 * Removes the containers and networks one process left behind: those labelled with its PID and
 * created since it started (a PID is reused; the creation time tells its containers from an older
 * namesake's). What `tbrl eval-trial --serve`'s reaper runs once that process is gone, however it went.
 */
export async function reapProcessSandboxes(conn: DockerConnection, pid: number, sinceSec: number): Promise<number> {
  const mine = [`${LABEL_PROJECT}`, `${LABEL_PID}=${pid}`];
  let removed = 0;
  for (const c of await conn.docker.listContainers({ all: true, filters: { label: mine } })) {
    if (c.Created < sinceSec) continue;
    await conn.docker.getContainer(c.Id).remove({ force: true, v: true }).then(
      () => removed++,
      () => undefined,
    );
  }
  for (const n of await conn.docker.listNetworks({ filters: { label: mine } })) {
    if (Date.parse(n.Created) / 1000 >= sinceSec) await conn.docker.getNetwork(n.Id).remove().catch(() => undefined);
  }
  return removed;
}
