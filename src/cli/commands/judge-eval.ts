import { writeFile } from 'node:fs/promises';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import type { JudgeBackendConfig } from '../../core/reward/judge/backends';
import { defaultEvalSetDir, formatReport, loadEvalSet, runJudgeEval, type ModelReport } from '../../core/reward/judge/eval';

const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);

export const judgeEvalCommand: CliCommand = {
  name: 'judge-eval',
  summary: 'Score the judge evaluation set with one or more judge models: pass rate against the expected ranges, mean, spread across attempts',
  usage: 'judge-eval --base-url URL --model M [--model M2 ...] [--attempts 3] [--api-key-env VAR] [--command "prog args"]... [--set DIR] [--prompt-version judge-v1] [--min-pass-rate 0.8] [--json out.json]',
  options: {
    'base-url': { type: 'string' },
    model: { type: 'string', multiple: true },
    command: { type: 'string', multiple: true },
    attempts: { type: 'string' },
    'api-key-env': { type: 'string' },
    set: { type: 'string' },
    'prompt-version': { type: 'string' },
    'min-pass-rate': { type: 'string' },
    concurrency: { type: 'string' },
    json: { type: 'string' },
  },
  async run({ values }) {
    const models = list(values.model);
    const commands = list(values.command);
    const baseUrl = values['base-url'] as string | undefined;
    if (models.length === 0 && commands.length === 0) throw new UsageError('name at least one judge: --base-url http://localhost:8000/v1 --model qwen3-32b, or --command "claude -p"');
    if (models.length > 0 && !baseUrl) throw new UsageError('--model needs --base-url (the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1)');
    const attempts = values.attempts === undefined ? 3 : Number(values.attempts);
    if (!Number.isInteger(attempts) || attempts < 1) throw new UsageError(`--attempts must be a whole number of at least 1 (got "${String(values.attempts)}")`);
    const minPass = values['min-pass-rate'] === undefined ? undefined : Number(values['min-pass-rate']);
    if (minPass !== undefined && !(minPass >= 0 && minPass <= 1)) throw new UsageError(`--min-pass-rate must be between 0 and 1 (got "${String(values['min-pass-rate'])}")`);
    const concurrency = values.concurrency === undefined ? 2 : Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a whole number of at least 1 (got "${String(values.concurrency)}")`);

    const setDir = (values.set as string | undefined) ?? defaultEvalSetDir();
    if (!setDir) throw new UsageError('no evaluation set found; pass --set DIR (a directory with cases.json, like test/fixtures/judge-eval)');
    const cases = await loadEvalSet(setDir);

    const backends: JudgeBackendConfig[] = [
      ...models.map((model): JudgeBackendConfig => ({ kind: 'openai', baseUrl: baseUrl!, model, apiKeyEnv: values['api-key-env'] as string | undefined })),
      ...commands.map((c): JudgeBackendConfig => {
        const [command, ...args] = c.split(/\s+/).filter(Boolean);
        return { kind: 'command', command, args };
      }),
    ];
    const reports: ModelReport[] = [];
    for (const backend of backends) {
      reports.push(await runJudgeEval({
        cases, backend, attempts, concurrency,
        judge: { promptVersion: values['prompt-version'] as string | undefined },
        onProgress: (line) => console.error(line),
      }));
    }
    console.log(formatReport(reports));
    if (typeof values.json === 'string') {
      await writeFile(values.json, JSON.stringify({ set: setDir, reports }, null, 2) + '\n', 'utf8');
      console.log(`Report -> ${values.json}`);
    }
    return minPass !== undefined && reports.some((r) => r.passRate < minPass) ? 1 : 0;
  },
};
