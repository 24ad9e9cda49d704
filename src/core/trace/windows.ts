import { StraceParser, type TraceEvent } from './strace-parser';
import type { RotatingLog } from './rotating-log';

/** The events between one command's begin and end markers. */
export interface TraceWindow {
  n: number;
  events: TraceEvent[];
  /** Events not kept because the per-command cap was reached. */
  dropped: number;
}

interface Tail {
  pids: Set<number>;
  events: TraceEvent[];
  lastAt: number;
}

/**
 * Cuts the continuous strace stream into per-command windows by the marker opens the shell makes
 * before and after each command. Every line goes through the parser (so cwd and process state stay
 * right between commands), but only events inside a window are kept, up to `maxEventsPerWindow`:
 * memory per command is bounded however much the command does.
 */
export class TraceWindows {
  readonly parser: StraceParser;
  private current?: TraceWindow;
  private readonly finished = new Map<number, TraceWindow>();
  private readonly waiters = new Map<number, (w: TraceWindow) => void>();
  private tail?: Tail;
  /** Lines seen in total (for tests and diagnostics). */
  lines = 0;

  constructor(
    rootPid: number,
    rootCwd: string,
    private readonly maxEventsPerWindow: number,
    private readonly log?: RotatingLog,
  ) {
    this.parser = new StraceParser(rootPid, rootCwd);
  }

  onLine(line: string): void {
    this.lines++;
    this.log?.append(line);
    for (const ev of this.parser.push(line)) this.onEvent(ev);
  }

  /** Resolves with the window of command `n` once its end marker is seen, or undefined after `timeoutMs`. */
  waitForEnd(n: number, timeoutMs: number): Promise<TraceWindow | undefined> {
    const done = this.finished.get(n);
    if (done) {
      this.finished.delete(n);
      return Promise.resolve(done);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(n);
        resolve(undefined);
      }, timeoutMs);
      this.waiters.set(n, (w) => {
        clearTimeout(timer);
        resolve(w);
      });
    });
  }

  /**
   * Keeps collecting events of `pids` (and processes they start) after a window closed, until they
   * are quiet for `quietMs` or `maxMs` passed: a server started in the background binds its port a
   * moment after the command returned, and that bind belongs to the command that started it.
   */
  async settle(pids: Iterable<number>, quietMs: number, maxMs: number): Promise<TraceEvent[]> {
    const tail: Tail = { pids: new Set(pids), events: [], lastAt: Date.now() };
    this.tail = tail;
    const started = Date.now();
    while (Date.now() - started < maxMs && Date.now() - tail.lastAt < quietMs) {
      await new Promise((r) => setTimeout(r, Math.min(25, quietMs)));
    }
    if (this.tail === tail) this.tail = undefined;
    return tail.events;
  }

  private onEvent(ev: TraceEvent): void {
    if (ev.kind === 'mark') {
      if (ev.phase === 'begin') {
        this.tail = undefined;
        this.current = { n: ev.n, events: [], dropped: 0 };
      } else if (this.current && this.current.n === ev.n) {
        const w = this.current;
        this.current = undefined;
        const waiter = this.waiters.get(w.n);
        if (waiter) {
          this.waiters.delete(w.n);
          waiter(w);
        } else {
          this.finished.set(w.n, w);
        }
      }
      return;
    }
    if (this.current) {
      if (this.current.events.length < this.maxEventsPerWindow) this.current.events.push(ev);
      else this.current.dropped++;
      return;
    }
    const tail = this.tail;
    if (tail && tail.pids.has(ev.pid)) {
      if (ev.kind === 'spawn') tail.pids.add(ev.child);
      if (tail.events.length < this.maxEventsPerWindow) tail.events.push(ev);
      tail.lastAt = Date.now();
    }
  }
}
