import type Docker from 'dockerode';
import { singleFileTar } from './archive';
import { LABEL_CAGE } from './gc';

/** Where the tracer's relocatable strace lives, in the tracer image and in every task container. */
export const STRACE_BUNDLE_DIR = '/.tbrl-strace';
/** The helper image whose bundle is mounted (trace/helper.ts starts the same image). */
export const STRACE_BUNDLE_IMAGE = 'tbrl-standin/tracer:latest';

const filled = new WeakMap<Docker, Map<string, Promise<string>>>();

/**
 * The tracer's strace bundle as a read-only mount at STRACE_BUNDLE_DIR: a named volume per tracer
 * image id, filled once from the image (through a created, never started container, as the cage's
 * volume is) and checked by its `.ready` file, written last. Root in the container cannot write or
 * remount it (no CAP_SYS_ADMIN), so the strace a restarted traced shell runs is the studio's; a
 * copy into the container's own filesystem (the fallback) can be raced by a background job.
 * Undefined when the tracer image is absent or the volume cannot be filled: the traced sandbox
 * then copies the bundle in before every start, as before.
 */
export async function straceBundleMount(docker: Docker): Promise<{ mount: Docker.MountSettings; volume: string } | undefined> {
  if (process.env.TBRL_STRACE_VOLUME === 'off') return undefined;
  const id = await docker.getImage(STRACE_BUNDLE_IMAGE).inspect().then((i) => i.Id, () => undefined);
  if (!id) return undefined;
  const name = `tbrl-strace-${id.replace(/^sha256:/, '').slice(0, 20)}`;
  let byDocker = filled.get(docker);
  if (!byDocker) filled.set(docker, (byDocker = new Map()));
  let ready = byDocker.get(name);
  if (!ready) {
    ready = fillVolume(docker, name, id);
    byDocker.set(name, ready);
    ready.catch(() => byDocker!.delete(name));
  }
  try {
    await ready;
  } catch {
    return undefined;
  }
  return {
    mount: { Type: 'volume', Source: name, Target: STRACE_BUNDLE_DIR, ReadOnly: true, VolumeOptions: { NoCopy: true } } as Docker.MountSettings,
    volume: name,
  };
}

async function fillVolume(docker: Docker, name: string, imageId: string): Promise<string> {
  await docker.createVolume({ Name: name, Labels: { [LABEL_CAGE]: `strace-${imageId}` } });
  const filler = await docker.createContainer({
    Image: imageId,
    Entrypoint: ['/.tbrl-never-started'],
    Labels: { [LABEL_CAGE]: `strace-${imageId}` },
    NetworkDisabled: true,
    HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/fill', VolumeOptions: { NoCopy: true } } as Docker.MountSettings] },
  });
  try {
    const present = await filler.getArchive({ path: '/fill/.ready' }).then((s) => { (s as unknown as { resume(): void }).resume(); return true; }, () => false);
    if (!present) {
      // Read whole (a few MiB) before the upload: piping one archive call into the other stalls.
      const chunks: Buffer[] = [];
      for await (const chunk of (await filler.getArchive({ path: `${STRACE_BUNDLE_DIR}/.` })) as unknown as AsyncIterable<Buffer>) chunks.push(chunk);
      await filler.putArchive(Buffer.concat(chunks), { path: '/fill' });
      await filler.putArchive(await singleFileTar('.ready', Buffer.from(`${imageId}\n`), 0o444), { path: '/fill' });
    }
  } finally {
    await filler.remove({ force: true, v: false }).catch(() => undefined);
  }
  return name;
}
