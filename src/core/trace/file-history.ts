import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../sandbox/types';
import { LABEL_KIND } from './helper';
import { BatchReader, type ReadAnswer } from './batch-reader';
import { readThroughArchive, type FileContent } from './file-content';
import { leaseReader, type ReaderLease } from '../sandbox/shared-readers';

type Getter = (path: string) => Promise<Readable>;

/**
 * Contents of written files, before and after a command.
 *
 * After: read in one round trip through the helper container, which sees the task's filesystem at
 * /proc/<shell pid>/root (same PID namespace). Symlinks there would resolve against the helper's
 * root, so those few go through the sandbox's archive API instead.
 *
 * Before: we cannot read a file before a command runs without knowing what it will write, so it is
 * the last content we saw (after an earlier traced command, or written by a file action through the
 * traced sandbox) and, for a file never seen, its content in the image the sandbox started from,
 * read from a baseline container of that image (running `sleep`, or only created when the image has
 * no `sleep`). Writes by untraced commands in between are invisible, so such a file's hunks are
 * computed against older content (over-stating the change, never hiding one).
 */
export class FileHistory {
  private readonly seen = new Map<string, FileContent>();
  private baseline?: ReaderLease<{ container: Docker.Container; reader?: BatchReader } | undefined>;

  constructor(
    private readonly docker: Docker,
    private readonly image: string,
    private readonly sandboxArchive: Getter,
    private readonly helperReader: BatchReader | undefined,
    private readonly labelsFrom: string,
  ) {}

  /** Current content in the running sandbox, one answer per path. */
  async after(paths: readonly string[], shellPid: number): Promise<FileContent[]> {
    if (!this.helperReader || !shellPid) return Promise.all(paths.map((p) => readThroughArchive(this.sandboxArchive, p)));
    const answers = await this.helperReader.read(paths.map((p) => `/proc/${shellPid}/root${p}`));
    return this.resolveSymlinks(paths, answers, this.sandboxArchive);
  }

  /**
   * Like `after`, for paths the caller did not just see written (the snapshot at the end of a run):
   * every directory above each path is asked about in the same round trip, and a path under a
   * symbolic link (which /proc/<pid>/root would resolve against the helper's root, not the task's)
   * or under something that is no directory goes through the sandbox's archive API, which resolves
   * it inside the container. So each answer is the one `readThroughArchive` would give, its error
   * included (per path: one unreadable path fails only itself). Rejects only when the reader fails.
   */
  async current(paths: readonly string[], shellPid: number): Promise<PromiseSettledResult<FileContent>[]> {
    if (!this.helperReader || !shellPid) return Promise.allSettled(paths.map((p) => readThroughArchive(this.sandboxArchive, p)));
    const parents = [...new Set(paths.flatMap(ancestors))];
    const answers = await this.helperReader.read([...parents, ...paths].map((p) => `/proc/${shellPid}/root${p}`));
    const isDir = new Map(parents.map((p, i) => [p, answers[i].kind === 'other' && answers[i].why === 'directory']));
    const own = answers.slice(parents.length);
    // The reader names a FIFO, socket or device only "other" (the archive says which: its reason is kept), and
    // an absent answer may be a file `cat` could not read: both are asked again through the archive API too.
    const ownAnswer = (a: ReadAnswer): a is FileContent => a.kind === 'file' || (a.kind === 'other' && (a.why === 'directory' || a.why.startsWith('larger than')));
    return Promise.allSettled(
      paths.map((p, i) => {
        const a = own[i];
        return ownAnswer(a) && ancestors(p).every((d) => isDir.get(d)) ? Promise.resolve(a) : readThroughArchive(this.sandboxArchive, p);
      }),
    );
  }

  async before(paths: readonly string[]): Promise<FileContent[]> {
    const out: (FileContent | undefined)[] = paths.map((p) => this.seen.get(p));
    const unseen = paths.filter((_, i) => !out[i]);
    if (unseen.length) {
      const base = await this.baselineContainer();
      let answers: FileContent[];
      if (!base) answers = unseen.map(() => ({ kind: 'absent' }));
      else {
        const getter: Getter = async (p) => (await base.container.getArchive({ path: p })) as unknown as Readable;
        answers = base.reader
          ? await this.resolveSymlinks(unseen, await base.reader.read(unseen), getter)
          : await Promise.all(unseen.map((p) => readThroughArchive(getter, p)));
      }
      let j = 0;
      for (let i = 0; i < out.length; i++) if (!out[i]) out[i] = answers[j++];
    }
    return out as FileContent[];
  }

  /** Starts the baseline container ahead of need (setup time rather than the first command's time). */
  warm(): void {
    void this.baselineContainer();
  }

  remember(path: string, content: FileContent | Buffer): void {
    this.seen.set(path, Buffer.isBuffer(content) ? { kind: 'file', content } : content);
  }

  async close(): Promise<void> {
    const lease = this.baseline;
    this.baseline = undefined;
    await lease?.release();
  }

  private async resolveSymlinks(paths: readonly string[], answers: ReadAnswer[], getter: Getter): Promise<FileContent[]> {
    return Promise.all(answers.map((a, i) => (a.kind === 'symlink' ? readThroughArchive(getter, paths[i]) : Promise.resolve(a))));
  }

  private baselineContainer(): Promise<{ container: Docker.Container; reader?: BatchReader } | undefined> {
    // The image's pristine files are the same for every run of it: an eval job shares one baseline (shared-readers.ts).
    this.baseline ??= leaseReader(`trace-baseline:${this.image}`, () => this.startBaseline(), async (base) => {
      base?.reader?.close();
      await base?.container.remove({ force: true }).catch(() => undefined);
    });
    return this.baseline.value;
  }

  private startBaseline(): Promise<{ container: Docker.Container; reader?: BatchReader } | undefined> {
    return (async () => {
      let labels: Record<string, string> = {};
      try {
        labels = (await this.docker.getContainer(this.labelsFrom).inspect()).Config?.Labels ?? {};
      } catch {
        // Labels are for cleanup only; proceed with ours.
      }
      let container: Docker.Container;
      try {
        container = await this.docker.createContainer({
          Image: this.image,
          Entrypoint: ['sleep', 'infinity'],
          Cmd: [],
          Labels: {
            [LABEL_PROJECT]: 'tbrl',
            [LABEL_RUN]: labels[LABEL_RUN] ?? 'unknown',
            [LABEL_PID]: String(process.pid),
            [LABEL_KIND]: 'trace-baseline',
          },
          HostConfig: { NetworkMode: 'none', LogConfig: { Type: 'none', Config: {} }, Memory: 64 * 1024 * 1024 },
        });
      } catch {
        // Without a baseline every unseen file counts as created: all its lines are new.
        return undefined;
      }
      try {
        await container.start();
        return { container, reader: await BatchReader.start(container) };
      } catch {
        // No `sleep`/`sh` in the image: the created container still serves archive reads.
        return { container };
      }
    })();
  }
}

/** `/a/b/c` → [`/a`, `/a/b`]: the directories the path is looked up through (the root excluded). */
function ancestors(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.slice(0, -1).map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}
