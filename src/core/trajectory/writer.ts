import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader, TrajectoryLine } from './schema';

/**
 * Appends trajectory.jsonl one line at a time. Each line is written with a single write(2) and
 * fsync'd before the call returns, so a run killed at any moment (SIGKILL, OOM, power loss after
 * the fsync) keeps every completed step and at most loses a partial last line, which the reader
 * tolerates. Synchronous on purpose: a step is seconds of container work, an fsync is
 * milliseconds, and an async writer would let a kill land between "step done" and "step on disk".
 */
export class TrajectoryWriter {
  private fd: number | undefined;
  private footerWritten = false;
  private stepCount = 0;

  private constructor(readonly path: string, fd: number) {
    this.fd = fd;
  }

  /** Creates the file (and its directory) and writes the header. Refuses to overwrite an existing trajectory. */
  static create(path: string, header: TrajectoryHeader): TrajectoryWriter {
    let fd: number;
    try {
      mkdirSync(dirname(path), { recursive: true });
      fd = openSync(path, 'wx');
    } catch (err) {
      const exists = (err as NodeJS.ErrnoException).code === 'EEXIST';
      throw new TbrlError(
        exists ? 'trajectory-exists' : 'trajectory-write',
        exists ? `A trajectory already exists at ${path}.` : `Cannot create the trajectory file ${path}: ${errorMessage(err)}`,
        exists ? 'Choose another output directory (--out) or remove the old run.' : 'Check that the output directory is writable (--out DIR).',
        { cause: err },
      );
    }
    const writer = new TrajectoryWriter(path, fd);
    writer.writeLine(header);
    return writer;
  }

  get steps(): number {
    return this.stepCount;
  }

  get closed(): boolean {
    return this.fd === undefined;
  }

  get hasFooter(): boolean {
    return this.footerWritten;
  }

  appendStep(step: StepRecord): void {
    if (this.footerWritten) throw new TbrlError('trajectory-closed', `Step ${step.index} came after the footer of ${this.path}.`, 'Write every step before the footer.');
    this.writeLine(step);
    this.stepCount++;
  }

  /** Writes the footer and closes the file. */
  writeFooter(footer: TrajectoryFooter): void {
    if (this.footerWritten) throw new TbrlError('trajectory-closed', `${this.path} already has a footer.`, 'Write the footer once, at the end of the run.');
    this.writeLine(footer);
    this.footerWritten = true;
    this.close();
  }

  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    closeSync(fd);
  }

  private writeLine(line: TrajectoryLine): void {
    if (this.fd === undefined) throw new TbrlError('trajectory-closed', `${this.path} is closed.`, 'Open a new writer for a new run.');
    const buf = Buffer.from(JSON.stringify(line) + '\n', 'utf8');
    let off = 0;
    try {
      while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
      fsyncSync(this.fd);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOSPC' && code !== 'EDQUOT' && code !== 'EFBIG') throw err;
      // The lines before this one are whole and on disk; a cut last line is what the reader skips as interrupted.
      throw new TbrlError(
        'DISK_FULL',
        `${this.path}: the disk is full (${code}) while writing a ${line.type} record; the lines written before it are kept.`,
        'Free space on that disk (or pass --out on another one) and run again; `tbrl replay` reads the steps kept so far.',
        { cause: err },
      );
    }
  }
}
