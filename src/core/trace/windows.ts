import { markPath, StraceParser, type TraceEvent } from './strace-parser';
import type { RotatingLog } from './rotating-log';

/** The events between one command's begin and end markers. */
export interface TraceWindow {
  n: number;
  events: TraceEvent[];
  /** Events not kept because the per-command cap was reached. */
  dropped: number;
  /**
   * Marker opens by another pid than the frame shell's, seen while this window was open (or since
   * the last one closed): an agent forging its own window's edges. Ignored as cuts; reported.
   */
  forged?: string[];
  /** How many forged opens in all (`forged` keeps the first few). */
  forgedCount?: number;
}

/** The open window, and whether the command's process has said `go`. */
interface OpenWindow extends TraceWindow {
  started: boolean;
}

/**
 * What bash reads while it starts (from an empty environment it looks up the user for $HOME and
 * $SHELL): left out of a command's trace when its process read them before saying `go`.
 */
const START_UP_READS = new Set(['/etc/nsswitch.conf', '/etc/passwd']);

/** Forged marker opens kept per window (the count goes on). */
const FORGED_KEPT = 5;

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
  private current?: OpenWindow;
  private readonly finished = new Map<number, TraceWindow>();
  private readonly waiters = new Map<number, (w: TraceWindow) => void>();
  private tail?: Tail;
  /** Forged marker opens seen between windows: they go to the next window. */
  private between: Pick<TraceWindow, 'forged' | 'forgedCount'> = {};
  /** The only pid whose marker opens cut windows: the frame shell (the parser's root). */
  private readonly markPid: number;
  /** Lines seen in total (for tests and diagnostics). */
  lines = 0;

  constructor(
    rootPid: number,
    rootCwd: string,
    private readonly maxEventsPerWindow: number,
    private readonly log?: RotatingLog,
  ) {
    this.parser = new StraceParser(rootPid, rootCwd);
    this.markPid = rootPid;
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
      const w = this.current;
      if (ev.phase === 'go' && w && w.n === ev.n && !w.started) {
        // The command's process is done starting: its own look-up of the user is bash's, not the
        // command's. Only those reads go (a replaced bash that did more before `go` keeps it in the
        // trace), so a `go` from anyone else gains nothing; a second one is reported below.
        w.started = true;
        w.events = w.events.filter((e) => !(e.kind === 'open' && e.pid === ev.pid && !e.write && START_UP_READS.has(e.path)));
        return;
      }
      if (ev.pid !== this.markPid || ev.phase === 'go') {
        // The frame shell runs no agent code, so no agent process can open a begin/end marker as its
        // pid, and the command's process says `go` once, before any agent code runs: any other
        // opener is a command trying to close its window early or open one nobody reads.
        const target = this.current ?? this.between;
        target.forgedCount = (target.forgedCount ?? 0) + 1;
        if ((target.forged ??= []).length < FORGED_KEPT) target.forged.push(`${markPath(ev.n, ev.phase)} by pid ${ev.pid}`);
        return;
      }
      if (ev.phase === 'begin') {
        this.tail = undefined;
        this.current = { n: ev.n, events: [], dropped: 0, ...this.between, started: false };
        this.between = {};
      } else if (w && w.n === ev.n) {
        this.current = undefined;
        const { started: _started, ...done } = w;
        const waiter = this.waiters.get(w.n);
        if (waiter) {
          this.waiters.delete(w.n);
          waiter(done);
        } else {
          this.finished.set(w.n, done);
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
