import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  authorization?: string;
}

export interface RecordingProxy {
  /** e.g. http://127.0.0.1:41234: what a client is pointed at instead of `target`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A loopback HTTP reverse proxy to `target` that records each request's method, path and
 * Authorization header: shows what a client really sends (e.g. the bearer token an editor keeps in
 * SecretStorage) to a server that does not check it. Plain HTTP only, no upgrades.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const base = new URL(target);
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    const headers: IncomingHttpHeaders = { ...req.headers, host: base.host };
    const up = request({ host: base.hostname, port: base.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`recording proxy: ${err.message}`);
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
