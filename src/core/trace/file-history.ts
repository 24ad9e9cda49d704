import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { LABEL_PID, LABEL_PROJECT, LABEL_RUN } from '../sandbox/types';
import { LABEL_KIND } from './helper';
import { readThroughArchive, type FileContent } from './file-content';

/**
 * The "before" side of line-level writes. We cannot read a file before a command runs without
 * knowing what it will write, so "before" is the last content we saw (after an earlier traced
 * command, or written by a file action through the traced sandbox), and for a file never seen,
 * its content in the image the sandbox started from, read from a created-but-never-started
 * container of that image. Writes by untraced commands in between are invisible, so such a
 * file's hunks are computed against older content (over-stating the change, never hiding one).
 */
export class FileHistory {
  private readonly seen = new Map<string, FileContent>();
  private baseline?: Promise<Docker.Container | undefined>;

  constructor(
    private readonly docker: Docker,
    private readonly image: string,
    private readonly getArchive: (path: string) => Promise<Readable>,
    private readonly labelsFrom: string,
  ) {}

  /** Current content in the running sandbox. */
  after(path: string): Promise<FileContent> {
    return readThroughArchive(this.getArchive, path);
  }

  async before(path: string): Promise<FileContent> {
    const known = this.seen.get(path);
    if (known) return known;
    const base = await this.baselineContainer();
    if (!base) return { kind: 'absent' };
    return readThroughArchive(async (p) => (await base.getArchive({ path: p })) as unknown as Readable, path);
  }

  remember(path: string, content: FileContent | Buffer): void {
    this.seen.set(path, Buffer.isBuffer(content) ? { kind: 'file', content } : content);
  }

  async close(): Promise<void> {
    const base = await this.baseline?.catch(() => undefined);
    this.baseline = undefined;
    await base?.remove({ force: true }).catch(() => undefined);
  }

  private baselineContainer(): Promise<Docker.Container | undefined> {
    this.baseline ??= (async () => {
      let labels: Record<string, string> = {};
      try {
        labels = (await this.docker.getContainer(this.labelsFrom).inspect()).Config?.Labels ?? {};
      } catch {
        // Labels are for cleanup only; proceed with ours.
      }
      try {
        return await this.docker.createContainer({
          Image: this.image,
          Entrypoint: ['/bin/true'],
          Cmd: [],
          Labels: {
            [LABEL_PROJECT]: 'tbrl',
            [LABEL_RUN]: labels[LABEL_RUN] ?? 'unknown',
            [LABEL_PID]: String(process.pid),
            [LABEL_KIND]: 'trace-baseline',
          },
          HostConfig: { NetworkMode: 'none', LogConfig: { Type: 'none', Config: {} } },
        });
      } catch {
        // Without a baseline every unseen file counts as created: all its lines are new.
        return undefined;
      }
    })();
    return this.baseline;
  }
}
