/**
 * Helper containers that only read an image's pristine files (the trace baseline, the originals of
 * the files a run changed) are the same for every run of that image. A process that runs many runs
 * at once (an eval job) opens a hold: while it is open, such a container outlives its run and serves
 * the next runs of the same image, instead of each run creating, starting and removing its own (on a
 * busy two-core machine a container start takes seconds). With no hold open (one `tbrl run`) a
 * container is removed as soon as its run lets go of it, as before.
 *
 * The containers carry the usual tbrl labels (PID included), so `tbrl gc` finds them if the process
 * dies holding them.
 */
export interface ReaderLease<T> {
  /** The shared value; a rejected creation is not kept, so a later run tries again. */
  readonly value: Promise<T>;
  /** Idempotent (every call waits for the same removal). Removes the container unless a hold keeps it for the next run. */
  release(): Promise<void>;
}

interface Entry {
  value: Promise<unknown>;
  users: number;
  dispose: (value: unknown) => Promise<void>;
}

const entries = new Map<string, Entry>();
let holds = 0;

async function disposeEntry(e: Entry): Promise<void> {
  const v = await e.value.catch(() => undefined);
  if (v !== undefined) await e.dispose(v).catch(() => undefined);
}

/** A reader container for `key` (e.g. `baseline:<image>`): shared while a hold is open, the run's own otherwise. */
export function leaseReader<T>(key: string, create: () => Promise<T>, dispose: (value: T) => Promise<void>): ReaderLease<T> {
  let released: Promise<void> | undefined;
  if (holds === 0) {
    const value = create();
    const own: Entry = { value, users: 1, dispose: dispose as Entry['dispose'] };
    return { value, release: () => (released ??= disposeEntry(own)) };
  }
  let entry = entries.get(key);
  if (!entry) {
    const created: Entry = { value: create(), users: 0, dispose: dispose as Entry['dispose'] };
    entry = created;
    entries.set(key, created);
    created.value.then(
      (v) => {
        if (v === undefined && entries.get(key) === created) entries.delete(key);
      },
      () => {
        if (entries.get(key) === created) entries.delete(key);
      },
    );
  }
  const e = entry;
  e.users++;
  return {
    value: e.value as Promise<T>,
    release: () =>
      (released ??= (async () => {
        e.users--;
        if (holds > 0 || e.users > 0) return;
        if (entries.get(key) === e) entries.delete(key);
        await disposeEntry(e);
      })()),
  };
}

/**
 * Keeps reader containers for reuse until the returned function is called; then the idle ones are
 * removed (those still in use go when their run releases them).
 */
export function holdSharedReaders(): () => Promise<void> {
  holds++;
  let ending: Promise<void> | undefined;
  // Every call waits for the same removal: a process that exits after a second call must not cut the first one short.
  return () =>
    (ending ??= (async () => {
      holds--;
      if (holds > 0) return;
      const idle = [...entries].filter(([, e]) => e.users === 0);
      for (const [key] of idle) entries.delete(key);
      await Promise.all(idle.map(([, e]) => disposeEntry(e)));
    })());
}

/** Reader containers kept right now (for tests). */
export function sharedReaderCount(): number {
  return entries.size;
}
