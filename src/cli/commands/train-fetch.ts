import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { RayJobsClient } from '../../core/trainer/jobs';
import { fetchCheckpoint } from '../../core/trainer/fetch';
import { clusterFrom, clusterOptions } from './train';

export const trainFetchCommand: CliCommand = {
  name: 'train fetch',
  summary: "Bring a training job's last checkpoint here and convert it to GGUF, ready for `tbrl serve --model`",
  usage: 'train fetch <job-id> --cluster URL [-o DIR (default .tbrl/models)] [--dtype f16|f32] [--python PATH] [--json]',
  options: { ...clusterOptions, out: { type: 'string', short: 'o' }, dtype: { type: 'string' }, python: { type: 'string' }, json: { type: 'boolean' } },
  async run({ positionals, values }) {
    if (positionals.length !== 1) throw new UsageError(`expected one job id (${this.usage})`);
    const dtype = (values.dtype as string | undefined) ?? 'f16';
    if (dtype !== 'f16' && dtype !== 'f32') throw new UsageError(`--dtype must be f16 or f32, not "${dtype}"`);
    const json = values.json === true;
    const r = await fetchCheckpoint({
      client: new RayJobsClient(clusterFrom(values)),
      jobId: positionals[0],
      outDir: (values.out as string | undefined) ?? '.tbrl/models',
      dtype,
      ...(typeof values.python === 'string' ? { python: values.python } : {}),
      onProgress: (m) => (json ? process.stderr : process.stdout).write(`${m}\n`),
    });
    if (json) console.log(JSON.stringify(r));
    else console.log(`GGUF: ${r.gguf}\n  serve it: tbrl serve --model ${r.gguf}`);
    return 0;
  },
};
