import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { DockerDemuxer } from '../sandbox/demux';
import { MAX_DIFF_BYTES, type FileContent } from './file-content';

/**
 * Reads many files per round trip through one long-lived `sh` in a container: a Docker archive
 * call costs ~25 ms per file, and a build writes dozens. The script answers each requested path
 * with a header line and, for regular files, the bytes:
 *   F <size>\n<bytes> | A (absent) | D (directory) | L (symlink: caller resolves) | B <size> (too big) | O (other)
 * Files are copied first so a file growing during the read cannot break the framing.
 */
const SCRIPT = [
  'while IFS= read -r p; do',
  '  if [ -L "$p" ]; then echo L',
  '  elif [ -d "$p" ]; then echo D',
  '  elif [ -f "$p" ]; then',
  '    if cat "$p" > /tmp/.tbrl-read 2>/dev/null; then',
  '      n=$(wc -c < /tmp/.tbrl-read); n=$((n + 0))',
  `      if [ "$n" -gt ${MAX_DIFF_BYTES} ]; then echo "B $n"; else echo "F $n"; cat /tmp/.tbrl-read; fi`,
  '    else echo A; fi',
  '  elif [ -e "$p" ]; then echo O',
  '  else echo A; fi',
  'done',
].join('\n');

export type ReadAnswer = FileContent | { kind: 'symlink' };

interface Waiter {
  count: number;
  answers: ReadAnswer[];
  resolve: (a: ReadAnswer[]) => void;
  reject: (e: Error) => void;
}

export class BatchReader {
  private buffer: Buffer = Buffer.alloc(0);
  private current?: Waiter;
  private queue: Promise<unknown> = Promise.resolve();
  private dead?: Error;

  private constructor(private readonly stream: Duplex) {
    const demux = new DockerDemuxer((kind, payload) => {
      if (kind === 'stdout') this.onData(payload);
    });
    stream.on('data', (chunk: Buffer) => demux.push(chunk));
    const fail = () => {
      this.dead ??= new Error('file reader stream ended');
      this.current?.reject(this.dead);
      this.current = undefined;
    };
    stream.on('end', fail);
    stream.on('close', fail);
    stream.on('error', fail);
  }

  static async start(container: Docker.Container): Promise<BatchReader> {
    const exec = await container.exec({ Cmd: ['sh', '-c', SCRIPT], AttachStdin: true, AttachStdout: true, AttachStderr: true });
    const stream = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
    return new BatchReader(stream);
  }

  /** One answer per path, in order. Paths containing a newline cannot be framed: answered "other". */
  read(paths: readonly string[]): Promise<ReadAnswer[]> {
    const job = this.queue.then(() => this.readNow(paths));
    this.queue = job.catch(() => undefined);
    return job;
  }

  close(): void {
    this.dead ??= new Error('file reader closed');
    this.stream.destroy();
  }

  private readNow(paths: readonly string[]): Promise<ReadAnswer[]> {
    if (this.dead) return Promise.reject(this.dead);
    const framable = paths.filter((p) => !p.includes('\n'));
    const result = new Promise<ReadAnswer[]>((resolve, reject) => {
      this.current = { count: framable.length, answers: [], resolve, reject };
    });
    if (framable.length === 0) {
      this.current?.resolve([]);
      this.current = undefined;
    } else {
      this.stream.write(framable.map((p) => `${p}\n`).join(''));
      this.parse();
    }
    return result.then((answers) => {
      let i = 0;
      return paths.map((p) => (p.includes('\n') ? { kind: 'other', why: 'newline in path' } : answers[i++]));
    });
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    this.parse();
  }

  private parse(): void {
    const w = this.current;
    if (!w) return;
    while (w.answers.length < w.count) {
      const nl = this.buffer.indexOf(10);
      if (nl < 0) return;
      const header = this.buffer.subarray(0, nl).toString('utf8');
      const [tag, sizeText] = header.split(' ');
      if (tag === 'F') {
        const size = Number(sizeText);
        if (this.buffer.length < nl + 1 + size) return;
        w.answers.push({ kind: 'file', content: Buffer.from(this.buffer.subarray(nl + 1, nl + 1 + size)) });
        this.buffer = this.buffer.subarray(nl + 1 + size);
        continue;
      }
      this.buffer = this.buffer.subarray(nl + 1);
      if (tag === 'A') w.answers.push({ kind: 'absent' });
      else if (tag === 'D') w.answers.push({ kind: 'other', why: 'directory' });
      else if (tag === 'L') w.answers.push({ kind: 'symlink' });
      else if (tag === 'B') w.answers.push({ kind: 'other', why: `larger than ${MAX_DIFF_BYTES} bytes` });
      else w.answers.push({ kind: 'other', why: `unreadable (${header.slice(0, 40)})` });
    }
    this.current = undefined;
    w.resolve(w.answers);
  }
}
