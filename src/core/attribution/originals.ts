import type Docker from 'dockerode';
import type { Readable } from 'node:stream';
import { readFile, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { LABEL_KIND, LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../sandbox/types';
import { statusCode } from '../sandbox/errors';
import { leaseReader, type ReaderLease } from '../sandbox/shared-readers';
import { MAX_DIFF_BYTES, readThroughArchive, type FileContent } from '../trace/file-content';
import type { TrajectoryHeader } from '../trajectory/schema';

/** `header.sandbox.originalImage`: the image the root run's container was created from. */
export type OriginalImage = NonNullable<NonNullable<TrajectoryHeader['sandbox']>['originalImage']>;

/** What a path held before the run, or why that cannot be known. */
export type OriginalContent = FileContent | { kind: 'unknown'; why: string };

/** Content of container paths as they were before the agent ran. */
export interface OriginalSource {
  read(path: string): Promise<OriginalContent>;
  /** Removes whatever the source created (idempotent). */
  close(): Promise<void>;
}

/** A source that knows nothing, with the reason (e.g. the root image is not recorded). */
export function unknownOriginals(why: string): OriginalSource {
  return { read: async () => ({ kind: 'unknown', why }), close: async () => {} };
}

/**
 * Reads originals from a container created (never started: the archive API works on created
 * containers, and the image needs no shell) from the root run's image. Created on the first read,
 * so a run that changed nothing costs nothing; labelled like every tbrl container so `tbrl gc`
 * and the leak checks see it if `close` never runs.
 */
export function imageOriginals(docker: Docker, image: OriginalImage, runId: string): OriginalSource {
  let lease: ReaderLease<ImageReader> | undefined;
  const ref = image.id ?? image.name;
  const described = image.id && image.id !== image.name ? `${image.name} (${image.id})` : image.name;
  const create = (): Promise<ImageReader> =>
    docker.createContainer({
      Image: ref,
      // Never run; an entrypoint only keeps the daemon from refusing images that declare none.
      Entrypoint: ['/bin/true'],
      Cmd: [],
      NetworkDisabled: true,
      Labels: { [LABEL_PROJECT]: 'tbrl', [LABEL_RUN]: runId, [LABEL_PID]: String(process.pid), [LABEL_KIND]: 'originals' },
      HostConfig: { NetworkMode: 'none', LogConfig: { Type: 'none', Config: {} } },
    }).then(
      (container) => new ImageReader(container),
      (err: unknown) => {
        if (statusCode(err) === 404) throw new Error(`the image ${described} the run started from no longer exists`);
        throw err;
      },
    );
  return {
    async read(path) {
      // Never written to, so the runs of an eval job share one (shared-readers.ts).
      lease ??= leaseReader(`originals:${ref}`, create, async (r) => {
        // v: anonymous volumes the image declares were created with the container.
        await r.container.remove({ force: true, v: true }).catch(() => undefined);
      });
      return (await lease.value).read(path);
    },
    async close() {
      const l = lease;
      lease = undefined;
      await l?.release();
    },
  };
}

/** Content kept per originals container for the runs that share it (a job's trials of one task write the same files). */
export const ORIGINALS_CACHE_BYTES = 16 * 1024 * 1024;

/**
 * An originals container and the answers it gave. Nothing ever writes to the container (it is never
 * started), so an answer stays true for its life: the next run of the same image that asks about the
 * same path (the file every trial of a task creates: a 404 each time) gets it without a call to the
 * daemon. Failed reads are not kept; file contents only up to ORIGINALS_CACHE_BYTES in all.
 */
export class ImageReader {
  private readonly answers = new Map<string, Promise<FileContent>>();
  private cachedBytes = 0;
  /** Archive calls made (for tests). */
  archiveReads = 0;

  constructor(readonly container: Docker.Container) {}

  read(path: string): Promise<FileContent> {
    const known = this.answers.get(path);
    if (known) return known;
    const answer = readThroughArchive(async (p) => {
      this.archiveReads++;
      return (await this.container.getArchive({ path: p })) as unknown as Readable;
    }, path);
    this.answers.set(path, answer);
    answer.then(
      (a) => {
        if (a.kind !== 'file') return;
        if (this.cachedBytes + a.content.length > ORIGINALS_CACHE_BYTES) this.answers.delete(path);
        else this.cachedBytes += a.content.length;
      },
      () => this.answers.delete(path),
    );
    return answer;
  }
}

export interface WorkspaceOrigin {
  hostPath: string;
  containerPath: string;
  mode: 'copy' | 'bind';
}

/**
 * A workspace run's project files are not in the image: they were copied in from the host folder
 * (which the copy never writes, so it still holds the originals) or bind-mounted (the host file is
 * the one the agent changed, so the original is gone). Other paths come from `image`.
 */
export function workspaceOriginals(image: OriginalSource, workspace: WorkspaceOrigin): OriginalSource {
  const root = posix.normalize(workspace.containerPath).replace(/\/+$/, '');
  return {
    async read(path) {
      const normal = posix.normalize(path);
      if (normal !== root && !normal.startsWith(`${root}/`)) return image.read(path);
      if (workspace.mode === 'bind') return { kind: 'unknown', why: `${root} is bind-mounted from ${workspace.hostPath}, so the agent changed the host file itself` };
      const host = join(workspace.hostPath, ...normal.slice(root.length).split('/').filter(Boolean));
      const s = await stat(host).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
        throw err;
      });
      if (!s) return { kind: 'absent' };
      if (!s.isFile()) return { kind: 'other', why: s.isDirectory() ? 'directory' : 'not a regular file' };
      if (s.size > MAX_DIFF_BYTES) return { kind: 'other', why: `larger than ${MAX_DIFF_BYTES} bytes` };
      return { kind: 'file', content: await readFile(host) };
    },
    close: () => image.close(),
  };
}

/**
 * The image a run's originals come from. A fork's own `sandbox.image` is a checkpoint (the source
 * run's container after step k), so it inherits its source's `originalImage`; runs written before
 * that field existed are followed back through `forkedFrom` to the root, whose `image` is the one.
 */
export async function originalImageOf(header: TrajectoryHeader, readHeader: (trajectory: string) => Promise<TrajectoryHeader | undefined>, depth = 0): Promise<OriginalImage | undefined> {
  if (header.sandbox?.originalImage) return header.sandbox.originalImage;
  if (!header.forkedFrom) return header.sandbox ? { name: header.sandbox.image } : undefined;
  if (!header.forkedFrom.trajectory || depth >= 32) return undefined;
  const source = await readHeader(header.forkedFrom.trajectory).catch(() => undefined);
  return source ? originalImageOf(source, readHeader, depth + 1) : undefined;
}

/** A root run's original image: the name it was started with and, when the daemon answers, the exact image id. */
export async function containerImage(docker: Docker, containerId: string, name: string): Promise<OriginalImage> {
  const id = await docker.getContainer(containerId).inspect().then((c) => c.Image, () => undefined);
  return id ? { name, id } : { name };
}
