import type { CliCommand } from '../command';
import { serveEnvironment } from '../../core/envserver/server';

export const envServerCommand: CliCommand = {
  name: 'env-server',
  summary: 'Serve a task environment over stdio (JSON-RPC 2.0, one object per line) for trainers: reset, step, credit, close',
  usage: 'env-server   (then write {"jsonrpc":"2.0","id":1,"method":"reset","params":{"task":"<dir>"}} to stdin)',
  options: {},
  async run() {
    await serveEnvironment({
      input: process.stdin,
      output: process.stdout,
      log: (line) => process.stderr.write(`[env-server] ${line}\n`),
    });
    return 0;
  },
};
