import { createServer, type AddressInfo } from 'node:net';
import { TbrlDebugSession } from '../../src/extension/debug/session';

export interface AdapterServer {
  port: number;
  close(): void;
}

/** The tbrl debug adapter on a free loopback port, a new session per connection: what DebugClient.start(port) talks to. */
export async function startAdapterServer(): Promise<AdapterServer> {
  const server = createServer((socket) => {
    const session = new TbrlDebugSession();
    session.setRunAsServer(true);
    session.start(socket, socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}
