import type { DockerSandbox } from '../sandbox/docker-sandbox';
import type { DockerSandboxProvider } from '../sandbox/provider';
import type { Checkpoint, Sandbox, SandboxProvider, SandboxSpec, SidecarSpec, Sidecars } from '../sandbox/types';

/**
 * Two things an eval job does off its trials' path, both bounded and both finished before the job
 * returns (so no container outlives it; a SIGKILL leaves them to `tbrl gc`, like any run's):
 *
 * - Warm sandboxes: while trials run, the containers of the next queued trials are created and
 *   started (`lookahead` at most, none beyond what the queue still needs), so a trial that starts
 *   takes a ready one instead of waiting for create + start. A warm container is fresh: nothing ran
 *   in it but its image's own entrypoint and an idle shell, and each is handed to exactly one trial.
 *   Only plain task sandboxes are pooled (no sidecar network, no workspace, no devcontainer).
 * - Deferred removal: a finished trial's containers (sandbox, tracer) are removed in the background
 *   once its result is recorded; at most `maxPendingRemovals` at a time, after which a trial waits.
 */
/** At most this many queued trials get a sandbox made ahead. */
export const MAX_WARM_LOOKAHEAD = 4;

/**
 * How many queued trials get a sandbox made ahead, from `TBRL_EVAL_WARM_POOL` (`setting`): a number
 * forces it (0: none), unset sizes it to the idle cores. A warm sandbox only moves a create and a
 * start off a trial's path, which pays only while a core would otherwise idle: with as many trials
 * running as there are cores (or other work keeping them busy: the 1-minute load average) the early
 * creates compete with the running trials for the same CPUs and the job gets slower (measured on 2
 * cores: src/core/eval/README.md, Benchmarks), so then none are made.
 */
export function warmLookahead(concurrency: number, cores: number, load1: number, setting?: string): number {
  const cap = Math.max(0, Math.min(concurrency, MAX_WARM_LOOKAHEAD));
  if (setting !== undefined && setting !== '' && Number.isFinite(Number(setting))) return Math.max(0, Math.min(cap, Math.floor(Number(setting))));
  const idle = cores - Math.max(concurrency, load1);
  return Math.max(0, Math.min(cap, Math.floor(idle)));
}

export class EvalSandboxPool implements SandboxProvider {
  private readonly idle = new Map<string, Promise<DockerSandbox | undefined>[]>();
  private idleCount = 0;
  private readonly removals = new Set<Promise<void>>();
  private closed = false;
  /** Warm containers handed out, and creates that found none (for the bench and tests). */
  readonly stats = { warmHits: 0, coldCreates: 0, warmed: 0, discarded: 0 };

  constructor(
    private readonly provider: DockerSandboxProvider,
    /** `lookahead`: asked at every prewarm (warmLookahead reads the load, which changes while a job runs). */
    private readonly options: { lookahead: number | (() => number); maxPendingRemovals: number; runLabel: string },
  ) {}

  get docker(): DockerSandboxProvider['docker'] {
    return this.provider.docker;
  }

  /** The pool's key for a spec, or undefined when such a sandbox is not pooled. */
  static keyOf(spec: SandboxSpec): string | undefined {
    if (spec.networkName || spec.workspace || spec.image.kind === 'devcontainer') return undefined;
    return JSON.stringify([spec.image, spec.limits ?? null, !!spec.network, spec.env ?? null, spec.workdir ?? null, spec.user ?? null]);
  }

  /**
   * Makes sure the next trials in the queue (their specs, in order) have a warm sandbox being made,
   * up to `lookahead` of them in all. Returns at once; creation goes on in the background.
   */
  prewarm(upcoming: SandboxSpec[]): void {
    if (this.closed) return;
    const lookahead = typeof this.options.lookahead === 'function' ? this.options.lookahead() : this.options.lookahead;
    if (lookahead <= 0) return;
    const needed = new Map<string, { n: number; spec: SandboxSpec }>();
    for (const spec of upcoming.slice(0, lookahead)) {
      const key = EvalSandboxPool.keyOf(spec);
      if (!key) continue;
      const e = needed.get(key) ?? { n: 0, spec };
      e.n++;
      needed.set(key, e);
    }
    for (const [key, { n, spec }] of needed) {
      const list = this.idle.get(key) ?? [];
      for (let have = list.length; have < n && this.idleCount < lookahead; have++) {
        const made = this.provider
          .createDocker({ ...spec, runId: this.options.runLabel, onProgress: undefined, signal: undefined })
          .then(
            (sb) => {
              this.stats.warmed++;
              return sb;
            },
            // A warm create that fails costs nothing: the trial creates its own and reports that error, if any.
            () => undefined,
          );
        list.push(made);
        this.idleCount++;
      }
      if (list.length) this.idle.set(key, list);
    }
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const key = EvalSandboxPool.keyOf(spec);
    const list = key ? this.idle.get(key) : undefined;
    const next = list?.shift();
    if (next) {
      this.idleCount--;
      if (!list!.length) this.idle.delete(key!);
      const sb = await next;
      if (sb && !spec.signal?.aborted) {
        this.stats.warmHits++;
        sb.adoptRun(spec.runId);
        return sb;
      }
      if (sb) this.remove(sb);
    }
    this.stats.coldCreates++;
    return this.provider.create(spec);
  }

  fork(checkpoint: Checkpoint, spec: Omit<SandboxSpec, 'image'>): Promise<Sandbox> {
    return this.provider.fork(checkpoint, spec);
  }

  gc(options?: { all?: boolean }): Promise<{ containers: number; images: number }> {
    return this.provider.gc(options);
  }

  removeCheckpoint(checkpoint: Checkpoint): Promise<void> {
    return this.provider.removeCheckpoint(checkpoint);
  }

  startSidecars(services: SidecarSpec[], options: { runId: string; internet: boolean; onProgress?: (line: string) => void; signal?: AbortSignal }): Promise<Sidecars> {
    return this.provider.startSidecars(services, options);
  }

  /** RunTaskOptions.deferClose: the close runs in the background; waits only while too many are pending. */
  readonly deferClose = async (close: () => Promise<void>): Promise<void> => {
    while (this.removals.size >= this.options.maxPendingRemovals) await Promise.race(this.removals);
    this.track(close());
  };

  private remove(sb: Sandbox): void {
    this.stats.discarded++;
    this.track(sb.close());
  }

  private track(p: Promise<void>): void {
    const settled: Promise<void> = p.catch(() => undefined).finally(() => this.removals.delete(settled));
    this.removals.add(settled);
  }

  /** Removes the warm sandboxes no trial took and waits for every pending removal. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const list of this.idle.values()) {
      for (const made of list) this.track(made.then((sb) => sb?.close()));
    }
    this.idle.clear();
    this.idleCount = 0;
    while (this.removals.size) await Promise.all([...this.removals]);
  }
}
