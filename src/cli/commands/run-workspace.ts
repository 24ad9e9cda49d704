import { allowListFrom } from '../../core/tasks/confine';
import { readFileSync } from 'node:fs';
import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { FORMAT_FLAGS, formatFromFlag, formatFlagsSentence } from '../../core/tasks/formats';
import { runWorkspace } from '../../core/run/run-workspace';
import { ScriptedPolicy } from '../../core/agent/scripted';
import { saveWorkspaceRunAsTask } from '../../core/run/save-task';
import { TbrlError } from '../../core/errors';

function positive(values: Record<string, unknown>, key: string): number | undefined {
  const raw = values[key];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${key} must be a positive whole number, not "${String(raw)}" (e.g. --${key} 30).`);
  return n;
}

/** A JSON array of turns: tests and demos drive the agent without a model. */
function scriptTurns(file: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--script ${file}: ${(err as Error).message}. It must be a JSON array of assistant turns, e.g. ["<bash>ls</bash>", "<done/>"].`);
  }
  if (!Array.isArray(parsed) || !parsed.every((t) => typeof t === 'string')) throw new UsageError(`--script ${file} must be a JSON array of strings (one assistant turn each).`);
  return parsed;
}

export const runWorkspaceCommand: CliCommand = {
  name: 'run-workspace',
  summary: "Run an agent on your own project in its devcontainer (a copy); writes the changes as a patch",
  usage: [
    'run-workspace <folder> --instruction TEXT [--verify CMD] [--devcontainer PATH] [--base-url URL] [--model NAME]',
    '              [--api-key KEY] [--n N] [--max-steps N] [--max-time SEC] [--out DIR] [--script TURNS.json]',
    '              [--allow-privilege KEY...]   accept devcontainer keys (mounts, capAdd...) refused by default',
    '',
    'The folder needs .devcontainer/devcontainer.json; the workspace is copied into the container, so your',
    'files are not touched. --verify runs in the container after the agent: exit 0 scores 1, else 0.',
    'The agent is a model (endpoint from --base-url, OPENAI_BASE_URL or .tbrl/config.json) or, with --script,',
    'a JSON array of turns. Output: trajectory.jsonl, report.md and changes.patch (apply with `git apply`;',
    'paths your .gitignore ignores and caches such as __pycache__/ are left out, binary files are full-index binary patches).',
    '--n N > 1 samples N candidates per turn and the listwise verifier chooses one.',
  ].join('\n'),
  options: {
    instruction: { type: 'string' },
    verify: { type: 'string' },
    devcontainer: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    'api-key': { type: 'string' },
    n: { type: 'string' },
    'max-steps': { type: 'string' },
    'max-time': { type: 'string' },
    out: { type: 'string' },
    script: { type: 'string' },
    'allow-privilege': { type: 'string', multiple: true },
  },
  async run({ positionals, values }) {
    if (positionals.length !== 1) throw new UsageError('give exactly one project folder, e.g. `tbrl run-workspace . --instruction "fix the failing test"`.');
    const instruction = values.instruction as string | undefined;
    if (!instruction?.trim()) throw new UsageError('--instruction is required, e.g. --instruction "make pytest pass".');
    const script = values.script as string | undefined;
    const controller = new AbortController();
    const onSigint = (): void => controller.abort('interrupted');
    process.once('SIGINT', onSigint);
    try {
      const { result: r, error } = await runWorkspace({
        workspaceFolder: positionals[0],
        instruction,
        verifyCommand: values.verify as string | undefined,
        devcontainerConfig: values.devcontainer as string | undefined,
        baseUrl: values['base-url'] as string | undefined,
        model: values.model as string | undefined,
        apiKey: values['api-key'] as string | undefined,
        n: positive(values, 'n'),
        maxSteps: positive(values, 'max-steps'),
        maxTimeSec: positive(values, 'max-time'),
        outDir: values.out as string | undefined,
        allowPrivileges: allowListFrom(values['allow-privilege']),
        ...(script ? { policyOverride: new ScriptedPolicy(scriptTurns(script)) } : {}),
        signal: controller.signal,
        onProgress: (e) => {
          if (e.type === 'phase' || e.type === 'info') console.error(`• ${e.message}`);
          else if (e.type === 'warning') console.error(`  ! ${e.message.split('\n')[0]}`);
        },
      });
      // A run that failed part way ends the command with its error, as before the result came back as a value.
      if (error) throw error;
      const reward = r.footer.reward;
      console.log(`Steps:      ${r.footer.steps} (ended: ${r.footer.endReason})`);
      console.log(`Reward:     ${reward ? `${reward.total.toFixed(3)} (verify: ${reward.testOutcomes?.[0]?.status})` : 'not computed (no --verify command)'}`);
      console.log(`Changes:    ${r.changes ? `${r.changes.split('\n').filter((l) => l.startsWith('diff --git')).length} file(s) in ${r.changesPath}` : 'none'}`);
      console.log(`Trajectory: ${r.trajectoryPath}`);
      console.log(`Next:       git apply ${r.changesPath}   or   tbrl save-task ${r.outDir} <task-dir>`);
      return r.footer.endReason === 'error' ? 1 : 0;
    } catch (err) {
      // The generic fix names only endpoints; here a turns file is the other way to drive the agent.
      if (err instanceof TbrlError && err.code === 'config-missing' && !script) throw new TbrlError(err.code, err.message, `${err.fix ?? ""} Or pass --script turns.json (a JSON array of agent turns).`, { cause: err });
      throw err;
    } finally {
      process.off('SIGINT', onSigint);
    }
  },
};

export const saveTaskCommand: CliCommand = {
  name: 'save-task',
  summary: 'Turn a workspace run into a task directory (instruction, Dockerfile, tests, reference solution)',
  usage: [
    `save-task <run-dir> <task-dir> [--format ${FORMAT_FLAGS.join('|')}]`,
    '',
    "The devcontainer's image with the workspace copied in becomes the task environment, the run's",
    'final state the reference solution, and the verify command a weighted pytest test (a failing TODO',
    'test without one). The workspace must still be as it was before the run. Then: tbrl validate <task-dir>.',
  ].join('\n'),
  options: { format: { type: 'string', default: 'tb' } },
  async run({ positionals, values }) {
    if (positionals.length !== 2) throw new UsageError('give a run directory and a new task directory, e.g. `tbrl save-task runs/myproj-20260101-120000 tasks/fix-bug`.');
    const format = formatFromFlag(values.format);
    if (!format) throw new UsageError(`--format must be ${formatFlagsSentence()}, not "${String(values.format)}".`);
    const r = await saveWorkspaceRunAsTask(positionals[0], positionals[1], format);
    for (const w of r.warnings) console.error(`  ! ${w}`);
    console.log(`Saved ${format} task in ${r.dir}\nNext: tbrl validate ${positionals[1]}`);
    return 0;
  },
};
