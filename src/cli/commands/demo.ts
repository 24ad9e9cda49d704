import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { runTask, safeName, timestamp, type RunProgress } from '../../core/run/run-task';
import { renderComparison, type ComparedRun } from '../../core/run/compare';
import { PARSE_ERROR_KIND } from '../../core/actions/execute';

/** The main job's bounds: a 135M model on 2 CPU cores, so few steps and short turns. */
const DEMO = { n: 4, verifier: 'listwise', maxSteps: 3, maxTokensPerTurn: 96, maxTimeSec: 420 };

function progress(label: string) {
  return (e: RunProgress) => {
    if (e.type === 'info' || e.type === 'phase') console.error(`[${label}] ${e.message}`);
    else if (e.type === 'warning') console.error(`[${label}] ! ${e.message.split('\n')[0]}`);
    else if (e.type === 'step') console.error(`[${label}] step ${e.step.index}: ${e.step.actions.filter((a) => a.kind !== PARSE_ERROR_KIND).map((a) => a.kind).join(', ') || 'no action run'}${e.step.parseErrors.length ? ` (${e.step.parseErrors.length} parse error(s))` : ''}`);
  };
}

export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'The main job: the local model (N=4 + listwise verifier) on a task, then the oracle, compared side by side',
  usage: [
    'demo [task-dir] [--out DIR] [--max-steps N]',
    '',
    `Runs the cached local model (tbrl serve, SmolLM2-135M) with n=${DEMO.n}, the ${DEMO.verifier} verifier on the same model,`,
    `at most ${DEMO.maxSteps} steps of ${DEMO.maxTokensPerTurn} tokens, then the oracle (reference solution), and writes`,
    '<out>/comparison.md (reward, steps, parse errors, verifier decisions, DepGPO factors, tokens, cost).',
    'A configured endpoint (--base-url, OPENAI_BASE_URL) is ignored here: the demo is about the local model.',
  ].join('\n'),
  options: { out: { type: 'string' }, 'max-steps': { type: 'string' } },
  async run({ positionals, values }) {
    if (positionals.length > 1) throw new UsageError(`expected at most one task directory, got ${positionals.length}`);
    const taskDir = positionals[0] ?? 'examples/hello-world';
    const maxSteps = values['max-steps'] !== undefined ? Number(values['max-steps']) : DEMO.maxSteps;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new UsageError(`--max-steps must be a whole number ≥ 1, not "${String(values['max-steps'])}"`);
    const root = resolve((values.out as string | undefined) ?? join('runs', `demo-${safeName(basename(resolve(taskDir)))}-${timestamp()}`));
    mkdirSync(root, { recursive: true });
    // The demo is about the local model: endpoints from the shell do not apply.
    const env = { ...process.env, OPENAI_BASE_URL: '', TBRL_MODEL: '' };
    const started = Date.now();
    const results: ComparedRun[] = [];
    for (const [label, options] of [
      ['local model', { policy: 'model' as const, n: DEMO.n, verifier: DEMO.verifier, maxSteps, maxTokensPerTurn: DEMO.maxTokensPerTurn, maxTimeSec: DEMO.maxTimeSec }],
      ['oracle (reference)', { policy: 'oracle' as const }],
    ] as const) {
      console.error(`\n• ${label}`);
      const { result: r, error } = await runTask({ taskDir, outDir: join(root, label.startsWith('oracle') ? 'oracle' : 'local-model'), env, onProgress: progress(label), ...options });
      // A failed run still has a trajectory and belongs in the comparison.
      if (error) console.error(`[${label}] ${error.message.split('\n')[0]}`);
      results.push({ label, policyDescription: r.policyDescription, header: r.header, steps: r.steps, footer: r.footer, trajectoryPath: r.trajectoryPath, reportPath: r.reportPath });
    }
    const comparison = renderComparison(results) + `\nWall time of the whole demo: ${((Date.now() - started) / 1000).toFixed(1)} s.\n`;
    const path = join(root, 'comparison.md');
    writeFileSync(path, comparison);
    console.log(comparison);
    console.log(`Comparison: ${path}`);
    return 0;
  },
};
