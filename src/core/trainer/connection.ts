import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';
import { TbrlError, errorMessage } from '../errors';

/**
 * How to reach a Ray dashboard (the Jobs REST API lives there). The token is sent as a bearer
 * header only; it is never written into a job, a bundle or a log line.
 */
export interface ClusterOptions {
  /** e.g. http://127.0.0.1:8265 or https://ray.example.com (a path prefix behind a proxy is kept). */
  url: string;
  token?: string;
  /** Extra headers a proxy in front of the dashboard needs (e.g. a Cloudflare Access id). */
  headers?: Record<string, string>;
  /** PEM text of a custom CA, or a path to a PEM file. */
  ca?: string;
  /** Per request; default 30 s. */
  timeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text(): string;
  json<T>(): T;
}

/** Oldest Ray whose Jobs API has everything the bridge uses (submission ids, delete, log tail, entrypoint resources). */
export const MIN_RAY_VERSION = '2.9.0';

export class RayConnection {
  readonly base: URL;
  private readonly ca?: string;

  constructor(readonly options: ClusterOptions) {
    this.base = parseClusterUrl(options.url);
    this.ca = options.ca ? loadCa(options.ca) : undefined;
  }

  /** Headers for HTTP and the log-tail websocket alike. */
  authHeaders(): Record<string, string> {
    return { ...(this.options.headers ?? {}), ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}) };
  }

  tlsOptions(): { ca?: string } {
    return this.ca ? { ca: this.ca } : {};
  }

  urlFor(path: string): URL {
    const prefix = this.base.pathname.replace(/\/+$/, '');
    return new URL(`${prefix}${path}`, this.base);
  }

  async request(method: string, path: string, body?: Buffer | string | object, extraHeaders: Record<string, string> = {}): Promise<HttpResponse> {
    const url = this.urlFor(path);
    let payload: Buffer | undefined;
    const headers: Record<string, string> = { ...this.authHeaders(), ...extraHeaders };
    if (Buffer.isBuffer(body)) payload = body;
    else if (typeof body === 'string') payload = Buffer.from(body, 'utf8');
    else if (body !== undefined) {
      payload = Buffer.from(JSON.stringify(body), 'utf8');
      headers['content-type'] = 'application/json';
    }
    if (payload) headers['content-length'] = String(payload.length);
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    const doRequest = url.protocol === 'https:' ? httpsRequest : httpRequest;

    const res = await new Promise<HttpResponse>((resolve, reject) => {
      const req = doRequest(url, { method, headers, ...(url.protocol === 'https:' ? this.tlsOptions() : {}) }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('error', reject);
        r.on('end', () => {
          const buf = Buffer.concat(chunks);
          resolve({
            status: r.statusCode ?? 0,
            headers: r.headers,
            body: buf,
            text: () => buf.toString('utf8'),
            json: <T>() => parseJsonAnswer<T>(buf, `${method} ${path}`, r.statusCode ?? 0, this.base),
          });
        });
      });
      req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', reject);
      if (payload) req.write(payload);
      req.end();
    }).catch((err: unknown) => {
      throw connectionError(this.base, err);
    });
    if (res.status === 401 || res.status === 403) throw authError(this.base, res.status, !!this.options.token, res.text());
    return res;
  }

  /** GET /api/version: proves the URL is a Ray dashboard we can talk to. */
  async checkVersion(): Promise<RayVersion> {
    const res = await this.request('GET', '/api/version');
    if (res.status === 404) {
      throw new TbrlError('ray-too-old', `${this.base.href} answers but has no /api/version: it is not a Ray dashboard, or a Ray older than ${MIN_RAY_VERSION}.`, `Point --cluster at the Ray dashboard (port 8265 by default) of a cluster running Ray >= ${MIN_RAY_VERSION}.`);
    }
    if (res.status !== 200) throw httpError('GET /api/version', res);
    let v: RayVersion;
    try {
      v = res.json<RayVersion>();
    } catch {
      throw new TbrlError('ray-not-ray', `${this.base.href}/api/version did not answer JSON (got "${res.text().slice(0, 120)}").`, 'Point --cluster at the Ray dashboard, e.g. http://head-node:8265; a proxy login page means a header or token is missing.');
    }
    if (typeof v.ray_version !== 'string') {
      throw new TbrlError('ray-not-ray', `${this.base.href}/api/version answered without a ray_version.`, 'Point --cluster at the Ray dashboard, e.g. http://head-node:8265.');
    }
    if (compareVersions(v.ray_version, MIN_RAY_VERSION) < 0) {
      throw new TbrlError('ray-too-old', `The cluster runs Ray ${v.ray_version}; the trainer bridge needs Ray >= ${MIN_RAY_VERSION} (job submission ids, delete and log tail).`, `Upgrade the cluster: pip install -U "ray[default]>=${MIN_RAY_VERSION}" on every node, then restart it.`);
    }
    return v;
  }
}

export interface RayVersion {
  version: string;
  ray_version: string;
  ray_commit?: string;
  session_name?: string;
}

export function parseClusterUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(/^[a-z]+:\/\//i.test(raw) ? raw : `http://${raw}`);
  } catch {
    throw new TbrlError('ray-bad-url', `"${raw}" is not a cluster URL.`, 'Pass the Ray dashboard address, e.g. --cluster http://127.0.0.1:8265');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TbrlError('ray-bad-url', `The cluster URL must be http or https, not ${url.protocol} (${raw}).`, 'Pass the Ray dashboard address, e.g. --cluster http://127.0.0.1:8265 (ray:// is the client port, not the Jobs API).');
  }
  if (url.username || url.password) {
    throw new TbrlError('ray-bad-url', 'The cluster URL carries credentials.', 'Drop user:password from the URL and set TBRL_RAY_TOKEN instead, so the secret does not end up in logs or shell history.');
  }
  return url;
}

function loadCa(ca: string): string {
  if (ca.includes('-----BEGIN')) return ca;
  try {
    return readFileSync(ca, 'utf8');
  } catch (err) {
    throw new TbrlError('ray-ca', `Cannot read the CA file ${ca}: ${errorMessage(err)}`, 'Pass --ca-file with the PEM file of the CA that signed the dashboard certificate.');
  }
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/).map((x) => parseInt(x, 10));
  const pb = b.split(/[.+-]/).map((x) => parseInt(x, 10));
  for (let i = 0; i < 3; i++) {
    const x = Number.isFinite(pa[i]) ? pa[i] : 0;
    const y = Number.isFinite(pb[i]) ? pb[i] : 0;
    if (x !== y) return x - y;
  }
  return 0;
}

export function connectionError(base: URL, err: unknown): TbrlError {
  const code = (err as { code?: string }).code ?? '';
  const where = base.href;
  if (['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ETIMEDOUT'].includes(code)) {
    return new TbrlError('ray-unreachable', `Cannot reach the Ray cluster at ${where} (${code}: ${errorMessage(err)}).`, `Check that the head node is up (\`ray status\` on it, or scripts/ray.sh start locally) and that its dashboard listens on that address (ray start --head --dashboard-host 0.0.0.0 --dashboard-port 8265).`, { cause: err });
  }
  if (/CERT|SSL|TLS|self.signed|unable to verify/i.test(code + ' ' + errorMessage(err))) {
    return new TbrlError('ray-tls', `TLS to ${where} failed (${code || 'tls'}: ${errorMessage(err)}).`, 'Pass the CA that signed the dashboard certificate with --ca-file ca.pem.', { cause: err });
  }
  return new TbrlError('ray-unreachable', `Request to the Ray cluster at ${where} failed: ${errorMessage(err)}`, 'Check --cluster and the network path to the head node.', { cause: err });
}

function authError(base: URL, status: number, hadToken: boolean, text: string): TbrlError {
  const detail = text.trim().slice(0, 200);
  return new TbrlError(
    status === 401 ? 'ray-unauthorized' : 'ray-forbidden',
    `The cluster at ${base.href} refused the request (${status}${detail ? `: ${detail}` : ''}).`,
    hadToken
      ? 'The token in TBRL_RAY_TOKEN was rejected: check it has not expired and grants job submission; a proxy may also need extra headers (--header name:value).'
      : 'The cluster needs credentials: export TBRL_RAY_TOKEN=<token> (sent as a bearer header), and --header name:value for any proxy header.',
  );
}

/**
 * Every Jobs API answer is a JSON object or array. Anything else (a proxy's HTML page, a cut
 * answer, `null`) is a stated error here, not a SyntaxError or TypeError in the caller.
 */
function parseJsonAnswer<T>(buf: Buffer, what: string, status: number, base: URL): T {
  const text = buf.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object') {
    throw new TbrlError('ray-bad-answer', `${what} on ${base.href} answered HTTP ${status} with a body that is not a JSON object ("${text.trim().slice(0, 120)}").`, 'Point --cluster at the Ray dashboard (port 8265 by default); a proxy or login page in between answers HTML instead of the Jobs API.');
  }
  return value as T;
}

export function httpError(what: string, res: HttpResponse): TbrlError {
  const text = res.text().trim();
  // Ray answers server errors with a Python traceback; its last line is the message that matters.
  const lastLine = text.split('\n').filter((l) => l.trim()).pop() ?? '';
  if (/No available agent/i.test(text)) {
    // The dashboard forwards job calls to the head's dashboard agent; this is Ray saying it has none.
    return new TbrlError('ray-no-agent', `${what} failed with HTTP ${res.status}: the cluster has no job agent ("${lastLine.slice(0, 200)}"). The head node's dashboard agent is not running: it could not bind its port (another Ray on the same machine holds it; Ray's default agent port is 52365), it crashed, or the head started seconds ago.`,
      'On the head node look at dashboard_agent.log in the session\'s logs folder and `ray status`. Two Rays on one machine each need their own ports for every component (scripts/ray.sh gives the studio\'s head its own: TBRL_RAY_PORT_BASE); right after `ray start`, wait a few seconds and retry.');
  }
  return new TbrlError('ray-http', `${what} failed with HTTP ${res.status}: ${lastLine.slice(0, 400) || '(empty body)'}`, res.status >= 500 ? 'The cluster had an internal error; `ray logs dashboard.log` on the head node shows the full trace.' : 'Check the request (job id, preset); `tbrl train list` shows known jobs.');
}
