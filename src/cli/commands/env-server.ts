import type { CliCommand } from '../command';
import { serveEnvironment } from '../../core/envserver/server';

export const envServerCommand: CliCommand = {
  name: 'env-server',
  summary: 'Serve a task environment over stdio (JSON-RPC 2.0, one object per line) for trainers: reset, step, credit, close',
  usage: 'env-server   (then write {"jsonrpc":"2.0","id":1,"method":"reset","params":{"task":"<dir>"}} to stdin)',
  options: {},
  async run() {
    // `ray job stop` (and a trainer shutting down) send SIGTERM: close the container before exiting.
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    try {
      await serveEnvironment({
        input: process.stdin,
        output: process.stdout,
        log: (line) => process.stderr.write(`[env-server] ${line}\n`),
        signal: stop.signal,
      });
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
    return stop.signal.aborted ? 143 : 0;
  },
};
