import WebSocket from 'ws';
import { TbrlError, errorMessage } from '../errors';
import { RayConnection, httpError } from './connection';
import type { ClusterOptions, RayVersion } from './connection';

export type JobStatus = 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';
export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

/** The subset of Ray's JobDetails the bridge reads. */
export interface JobDetails {
  type?: string;
  job_id?: string | null;
  submission_id: string;
  status: JobStatus;
  entrypoint: string;
  message?: string | null;
  error_type?: string | null;
  start_time?: number | null;
  end_time?: number | null;
  metadata?: Record<string, string> | null;
  runtime_env?: Record<string, unknown> | null;
  driver_exit_code?: number | null;
}

export interface SubmitRequest {
  entrypoint: string;
  submission_id: string;
  runtime_env: Record<string, unknown>;
  metadata: Record<string, string>;
  entrypoint_num_cpus?: number;
  entrypoint_num_gpus?: number;
}

export interface TailOptions {
  signal?: AbortSignal;
  /** Reconnects after a dropped socket before giving up; default 3. */
  maxReconnects?: number;
  reconnectDelayMs?: number;
  /** Filled in as the tail runs: websocket frames received and connections made. */
  stats?: { frames: number; connections: number };
  /**
   * When the caller's signal stops the tail, ask the cluster for the job's status first (default).
   * false: return undefined at once: a caller that stops because it has read all it needs saves a
   * dashboard round trip (a busy head answers in tenths of a second) at the very end of its wait.
   */
  statusOnAbort?: boolean;
}

/** Ray's Jobs REST API (dashboard/modules/job/job_head.py): the only server the bridge talks to. */
export class RayJobsClient {
  readonly conn: RayConnection;

  constructor(options: ClusterOptions | RayConnection) {
    this.conn = options instanceof RayConnection ? options : new RayConnection(options);
  }

  version(): Promise<RayVersion> {
    return this.conn.checkVersion();
  }

  /** GET also pins the package for Ray's temporary-reference window, so submit right after. */
  async packageExists(uri: string): Promise<boolean> {
    const res = await this.conn.request('GET', packagePath(uri));
    if (res.status === 200) return true;
    if (res.status === 404) return false;
    throw httpError(`GET ${packagePath(uri)}`, res);
  }

  async uploadPackage(uri: string, data: Buffer): Promise<void> {
    const res = await this.conn.request('PUT', packagePath(uri), data, { 'content-type': 'application/zip' });
    if (res.status === 413) {
      throw new TbrlError('ray-package-too-large', `The cluster refused the ${(data.length / 1048576).toFixed(1)} MiB bundle as too large (HTTP 413; a proxy in front of the dashboard may have a lower limit than Ray's 100 MiB).`, 'Make the bundle smaller (fewer tasks per job, no large data in task directories) or raise the proxy\'s body size limit.');
    }
    if (res.status !== 200) throw httpError(`PUT ${packagePath(uri)}`, res);
  }

  /** Uploads only when the cluster does not have the package yet. Returns whether bytes were sent. */
  async ensurePackage(uri: string, data: Buffer): Promise<boolean> {
    if (await this.packageExists(uri)) return false;
    await this.uploadPackage(uri, data);
    return true;
  }

  /**
   * Submits with the caller's deterministic submission_id. When a job with that id already exists
   * (a retry after a lost answer, or the same inputs submitted twice) the existing job is returned
   * instead of a second run being started.
   */
  async submit(req: SubmitRequest): Promise<{ submissionId: string; existed: boolean; job: JobDetails }> {
    const existing = await this.find(req.submission_id);
    if (existing) return { submissionId: req.submission_id, existed: true, job: existing };
    const res = await this.conn.request('POST', '/api/jobs/', req);
    if (res.status !== 200) {
      // Lost race with a concurrent identical submit: Ray refuses the duplicate id; report the job it kept.
      const again = await this.find(req.submission_id);
      if (again && /already exists/i.test(res.text())) return { submissionId: req.submission_id, existed: true, job: again };
      throw httpError('POST /api/jobs/', res);
    }
    const job = await this.status(req.submission_id);
    return { submissionId: req.submission_id, existed: false, job };
  }

  /**
   * Submits a job whose submission_id the caller has just made up at random (nothing can exist under
   * it yet): one POST, without submit()'s look-up before and its status read after, two dashboard
   * round trips a caller that only tails the job does not need.
   */
  async submitNew(req: SubmitRequest): Promise<void> {
    const res = await this.conn.request('POST', '/api/jobs/', req);
    if (res.status !== 200) throw httpError('POST /api/jobs/', res);
  }

  async find(id: string): Promise<JobDetails | undefined> {
    const res = await this.conn.request('GET', `/api/jobs/${encodeURIComponent(id)}`);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw httpError(`GET /api/jobs/${id}`, res);
    return res.json<JobDetails>();
  }

  async status(id: string): Promise<JobDetails> {
    const job = await this.find(id);
    if (!job) throw noSuchJob(id, this.conn.base.href);
    return job;
  }

  async list(): Promise<JobDetails[]> {
    const res = await this.conn.request('GET', '/api/jobs/');
    if (res.status !== 200) throw httpError('GET /api/jobs/', res);
    return res.json<JobDetails[]>();
  }

  async logs(id: string): Promise<string> {
    const res = await this.conn.request('GET', `/api/jobs/${encodeURIComponent(id)}/logs`);
    if (res.status === 404) throw noSuchJob(id, this.conn.base.href);
    if (res.status !== 200) throw httpError(`GET /api/jobs/${id}/logs`, res);
    return res.json<{ logs: string }>().logs;
  }

  async stop(id: string): Promise<boolean> {
    const res = await this.conn.request('POST', `/api/jobs/${encodeURIComponent(id)}/stop`);
    if (res.status === 404) throw noSuchJob(id, this.conn.base.href);
    if (res.status !== 200) throw httpError(`POST /api/jobs/${id}/stop`, res);
    return res.json<{ stopped: boolean }>().stopped;
  }

  async delete(id: string): Promise<boolean> {
    const res = await this.conn.request('DELETE', `/api/jobs/${encodeURIComponent(id)}`);
    if (res.status === 404) throw noSuchJob(id, this.conn.base.href);
    if (res.status !== 200) throw httpError(`DELETE /api/jobs/${id}`, res);
    return res.json<{ deleted: boolean }>().deleted;
  }

  /** Polls until the job reaches a terminal status. */
  async wait(id: string, options: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {}): Promise<JobDetails> {
    const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
    for (;;) {
      const job = await this.status(id);
      if (TERMINAL_STATUSES.has(job.status)) return job;
      if (options.signal?.aborted) return job;
      if (Date.now() > deadline) throw new TbrlError('ray-wait-timeout', `Job ${id} is still ${job.status} after ${Math.round((options.timeoutMs ?? 600_000) / 1000)} s.`, `Follow it with \`tbrl train logs ${id} --follow\` or stop it with \`tbrl train stop ${id}\`.`);
      await sleep(options.intervalMs ?? 1000, options.signal);
    }
  }

  /**
   * Streams the job's log over the dashboard websocket (/api/jobs/{id}/logs/tail) until the job
   * ends. Ray replays the log from its start on every connection, so after a reconnect the bytes
   * already delivered are skipped. A socket that keeps dropping ends in a stated error.
   */
  tail(id: string, onText: (text: string) => void, options: TailOptions & { statusOnAbort: false }): Promise<JobDetails | undefined>;
  tail(id: string, onText: (text: string) => void, options?: TailOptions): Promise<JobDetails>;
  async tail(id: string, onText: (text: string) => void, options: TailOptions = {}): Promise<JobDetails | undefined> {
    const maxReconnects = options.maxReconnects ?? 3;
    let delivered = 0;
    let failures = 0;
    let lastError = '';
    for (;;) {
      let seen = 0;
      let attemptError = '';
      const closedCleanly = await new Promise<boolean>((resolve) => {
        const url = this.conn.urlFor(`/api/jobs/${encodeURIComponent(id)}/logs/tail`);
        url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
        if (options.stats) options.stats.connections++;
        // No permessage-deflate: Ray's dashboard proxy forwards the offer to its job module but reads
        // the reply frames uncompressed, so a compressed stream dies with "Unknown msg type: 258".
        const ws = new WebSocket(url, { headers: this.conn.authHeaders(), ...this.conn.tlsOptions(), perMessageDeflate: false, handshakeTimeout: this.conn.options.timeoutMs ?? 30_000 });
        // terminate, not close: Ray's tail handler never reads from the socket, so it answers a close
        // frame only when the job ends (seconds after the caller stopped listening, or never).
        const onAbort = (): void => ws.terminate();
        options.signal?.addEventListener('abort', onAbort, { once: true });
        ws.on('message', (data: WebSocket.RawData) => {
          if (options.stats) options.stats.frames++;
          const text = data.toString();
          const start = Math.max(0, delivered - seen);
          seen += text.length;
          if (start < text.length) {
            const fresh = text.slice(start);
            delivered += fresh.length;
            onText(fresh);
          }
        });
        ws.on('unexpected-response', (_req, res) => {
          attemptError = `HTTP ${res.statusCode}`;
          ws.terminate();
        });
        ws.on('error', (err) => {
          // The first cause of an attempt is the useful one (terminate() adds its own error).
          attemptError ||= errorMessage(err);
        });
        ws.on('close', (code) => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve(code === 1000 || code === 1005);
        });
      });
      if (attemptError) lastError = attemptError;
      if (options.signal?.aborted) return options.statusOnAbort === false ? undefined : this.status(id);
      const job = await this.status(id).catch((err: unknown) => {
        lastError = errorMessage(err);
        return undefined;
      });
      if (job && TERMINAL_STATUSES.has(job.status)) {
        // The socket closes when the driver exits; fetch anything written after the last frame.
        const all = await this.logs(id).catch(() => '');
        if (all.length > delivered) onText(all.slice(delivered));
        return job;
      }
      // A socket that closes cleanly without a single frame while the job runs is broken too
      // (that is how a proxy that mangles frames looks); a productive connection resets the count.
      if (!closedCleanly || !job || seen === 0) failures++;
      else failures = 0;
      if (failures > maxReconnects) {
        throw new TbrlError('ray-tail-failed', `Lost the log stream of job ${id} ${failures} times${lastError ? ` (last: ${lastError})` : ''}; the job itself may still be running.`, `Check the job with \`tbrl train status ${id}\` and re-attach with \`tbrl train logs ${id} --follow\`.`);
      }
      await sleep((options.reconnectDelayMs ?? 1000) * Math.max(1, failures), options.signal);
    }
  }
}

export function packagePath(uri: string): string {
  const m = /^(gcs):\/\/(_ray_pkg_[0-9a-f]+\.zip)$/.exec(uri);
  if (!m) throw new TbrlError('ray-package-uri', `"${uri}" is not a content-addressed Ray package URI.`, 'Use gcs://_ray_pkg_<hex>.zip (the bundle builder makes one).');
  return `/api/packages/${m[1]}/${m[2]}`;
}

function noSuchJob(id: string, where: string): TbrlError {
  return new TbrlError('ray-no-such-job', `The cluster at ${where} has no job "${id}".`, 'List the jobs with `tbrl train list --cluster URL`; ids look like tbrl-<preset>-<hash>.');
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
