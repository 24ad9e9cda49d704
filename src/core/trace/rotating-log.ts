import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/**
 * An append-only text log that never exceeds `maxBytes` on disk: when the current file would pass
 * half the budget it becomes `<path>.1` (replacing the previous one) and a new file starts. So the
 * most recent ~maxBytes/2..maxBytes of trace are always kept for debugging, and nothing more.
 */
export class RotatingLog {
  private fd: number;
  private size = 0;
  private pending: string[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {
    this.fd = openSync(path, 'w');
  }

  append(line: string): void {
    if (this.closed) return;
    const bytes = Buffer.byteLength(line) + 1;
    // A single line longer than the file budget is cut: the budget is a hard limit.
    const half = Math.max(1, Math.floor(this.maxBytes / 2));
    const text = bytes > half ? `${line.slice(0, Math.max(0, half - 16))}…[cut]` : line;
    this.pending.push(text);
    this.pendingBytes += Buffer.byteLength(text) + 1;
    if (this.pendingBytes >= 64 * 1024) this.flush();
  }

  flush(): void {
    if (this.closed || this.pending.length === 0) return;
    const half = Math.max(1, Math.floor(this.maxBytes / 2));
    for (const line of this.pending) {
      const chunk = `${line}\n`;
      const n = Buffer.byteLength(chunk);
      if (this.size + n > half) this.rotate();
      writeSync(this.fd, chunk);
      this.size += n;
    }
    this.pending = [];
    this.pendingBytes = 0;
  }

  close(): void {
    this.flush();
    this.closed = true;
    closeSync(this.fd);
  }

  /** Removes the log and its rotated predecessor. */
  remove(): void {
    if (!this.closed) this.close();
    rmSync(this.path, { force: true });
    rmSync(`${this.path}.1`, { force: true });
  }

  private rotate(): void {
    closeSync(this.fd);
    renameSync(this.path, `${this.path}.1`);
    this.fd = openSync(this.path, 'w');
    this.size = 0;
  }
}
