import type { CliCommand } from '../command';
import { createDockerProvider } from '../../core/sandbox/index';

/** `tbrl gc [--all]`: remove sandboxes and checkpoints left behind by runs that died. */
export const gcCommand: CliCommand = {
  name: 'gc',
  summary: 'Remove sandbox containers and checkpoint images of finished or crashed runs',
  usage: 'gc [--all] [--socket PATH]\n\n  Without --all, only runs whose process is gone are collected; --all also removes\n  sandboxes of runs still in progress (they will fail). Task images are a build cache and stay.',
  options: {
    all: { type: 'boolean', default: false },
    socket: { type: 'string' },
  },
  async run({ values }) {
    const provider = createDockerProvider({ socketPath: typeof values.socket === 'string' ? values.socket : undefined });
    const r = await provider.gc({ all: values.all === true });
    console.log(`removed ${r.containers} container${r.containers === 1 ? '' : 's'} and ${r.images} checkpoint image${r.images === 1 ? '' : 's'}`);
    return 0;
  },
};
