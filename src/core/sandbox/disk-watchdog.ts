/**
 * Bounds what a container writes to its own filesystem where the storage driver cannot
 * (overlay2 on ext4 refuses `--storage-opt size`): polls the writable layer's size off the exec
 * hot path and reports when it passes the limit, so the sandbox can stop the writers.
 */

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

export interface DiskPollState {
  /** Layer size when the watchdog last stopped writers; undefined while under the limit. */
  trippedAt?: number;
  previous?: number;
}

export interface DiskPollDecision {
  stop: boolean;
  /** When to poll next. */
  delayMs: number;
  state: DiskPollState;
}

export interface DiskPollTiming {
  intervalMs: number;
  fastIntervalMs: number;
}

export const DEFAULT_DISK_POLL_TIMING: DiskPollTiming = { intervalMs: 2000, fastIntervalMs: 250 };

/** A fast local disk's sequential write rate: the headroom this could fill before the next poll sets how soon that poll comes. */
const ASSUMED_WRITE_BYTES_PER_S = GiB;

/**
 * Pure decision for one poll. Stops once on crossing the limit, then only again if the layer grows
 * further: while the agent is over the limit it must be able to run `ls` and `rm` to recover.
 * Polls every `intervalMs` when far from the limit, sooner when a writer could use up the headroom
 * before the next poll, and every `fastIntervalMs` while the layer grows or is over the limit.
 */
export function decideDiskPoll(
  state: DiskPollState,
  sizeBytes: number,
  limitBytes: number,
  timing: DiskPollTiming = DEFAULT_DISK_POLL_TIMING,
): DiskPollDecision {
  const growing = state.previous !== undefined && sizeBytes - state.previous > MiB;
  const headroom = Math.max(0, limitBytes - sizeBytes);
  const byHeadroom = Math.max(timing.fastIntervalMs, Math.min(timing.intervalMs, (headroom / ASSUMED_WRITE_BYTES_PER_S) * 1000));
  const delayMs = growing ? timing.fastIntervalMs : byHeadroom;
  if (sizeBytes <= limitBytes) return { stop: false, delayMs, state: { previous: sizeBytes } };
  // Writes smaller than this after a stop are the agent's own recovery (logs, temp files), not a new filler.
  const regrowth = Math.max(MiB, limitBytes / 64);
  const stop = state.trippedAt === undefined || sizeBytes > state.trippedAt + regrowth;
  return { stop, delayMs: timing.fastIntervalMs, state: { previous: sizeBytes, trippedAt: stop ? sizeBytes : state.trippedAt } };
}

/** "8 GiB", "64 MiB", "8.3 GiB": whole numbers without decimals. */
export function formatDiskSize(bytes: number): string {
  const [unit, size] = bytes >= GiB ? ['GiB', bytes / GiB] : ['MiB', bytes / MiB];
  const shown = Number.isInteger(size) ? String(size) : size.toFixed(1);
  return `${shown} ${unit}`;
}

export function diskLimitNotice(limitBytes: number, writtenBytes: number): string {
  return `[stopped: the sandbox disk limit of ${formatDiskSize(limitBytes)} was exceeded (${formatDiskSize(writtenBytes)} written); delete files to continue]`;
}

export interface DiskWatchdogOptions {
  limitBytes: number;
  /** The writable layer's size in bytes (SizeRw). */
  measure: () => Promise<number>;
  onExceeded: (writtenBytes: number) => Promise<void>;
  timing?: DiskPollTiming;
}

/** Polls for the whole life of the sandbox (background writers too); unref'd so it never holds the process open. */
export class DiskWatchdog {
  private timer?: NodeJS.Timeout;
  private state: DiskPollState = {};
  private stopped = false;
  /** Duration of the last poll, for diagnostics and the cost figure in the docs. */
  lastPollMs = 0;

  private readonly timing: DiskPollTiming;

  constructor(private readonly options: DiskWatchdogOptions) {
    this.timing = options.timing ?? DEFAULT_DISK_POLL_TIMING;
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(this.timing.fastIntervalMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One poll now (also what the timer runs); polls never overlap because each schedules the next. */
  async poll(): Promise<DiskPollDecision | undefined> {
    const t = process.hrtime.bigint();
    let size: number;
    try {
      size = await this.options.measure();
    } catch {
      // The container is being removed or the daemon is busy: the next poll tries again.
      return undefined;
    } finally {
      this.lastPollMs = Number(process.hrtime.bigint() - t) / 1e6;
    }
    const decision = decideDiskPoll(this.state, size, this.options.limitBytes, this.timing);
    this.state = decision.state;
    if (decision.stop && !this.stopped) {
      await this.options.onExceeded(size).catch(() => undefined);
      // Writers keep writing until the kill lands: the baseline for "grew again" is what they left.
      const left = await this.options.measure().catch(() => size);
      this.state = { previous: left, trippedAt: Math.max(size, left) };
    }
    return decision;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.poll().then((d) => {
        this.schedule(d?.delayMs ?? this.timing.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }
}
