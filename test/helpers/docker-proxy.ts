import { createServer, connect, type Socket } from 'node:net';

/**
 * A unix socket that forwards to the real Docker daemon until `cut()`: lets a test make the daemon
 * "die" mid-run without stopping the daemon everybody else on the machine is using.
 */
export async function dockerProxy(path: string, daemonSocket = '/var/run/docker.sock'): Promise<{ cut: () => Promise<void> }> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const up = connect(daemonSocket);
    open.add(client).add(up);
    client.pipe(up).pipe(client);
    const drop = () => { client.destroy(); up.destroy(); };
    client.on('error', drop).on('close', drop);
    up.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return { cut: () => new Promise<void>((resolve) => { server.close(() => resolve()); for (const s of open) s.destroy(); }) };
}
