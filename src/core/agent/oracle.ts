import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { TbrlError, errorMessage } from '../errors';
import type { Task } from '../tasks/model';
import { ScriptedPolicy } from './scripted';
import { splitTopLevelCommands } from './shell-split';

/**
 * Runs the task's reference solution as agent turns, for demos, task validation (the oracle must
 * pass) and tests. A simple solution.sh is split into its top-level commands, one step each, so
 * DepGPO sees several commands; a script the splitter does not fully understand runs whole in
 * one step (in a child bash, so its `set -e` or `exit` cannot end the agent's shell). Commands
 * from solution.yaml are one step each. The last turn ends with `<finish>`.
 */
export function oracleTurns(task: Task): { turns: string[]; mode: 'split' | 'whole-script' | 'commands' } {
  const solution = task.solution;
  if (!solution) {
    throw new TbrlError(
      'no-solution',
      `Task ${task.id} has no reference solution, so the oracle policy has nothing to run.`,
      'Add solution.sh (Terminal-Bench) or solution/solve.sh (Harbor) to the task, or use a model: --policy model with --base-url/--model (or OPENAI_BASE_URL and TBRL_MODEL).',
    );
  }
  const timeoutSecs = Math.max(1, Math.round(task.agentTimeoutSec));
  let commands: string[];
  let mode: 'split' | 'whole-script' | 'commands';
  if (solution.kind === 'commands') {
    commands = solution.commands.map((c) => c.trim()).filter((c) => c !== '');
    mode = 'commands';
  } else {
    let script: string;
    try {
      script = readFileSync(solution.path, 'utf8');
    } catch (err) {
      throw new TbrlError('no-solution', `Cannot read the reference solution ${solution.path}: ${errorMessage(err)}`, 'Check that the file exists and is readable.', { cause: err });
    }
    const split = splitTopLevelCommands(script);
    if (split) {
      commands = split;
      mode = 'split';
    } else {
      commands = [wholeScript(script)];
      mode = 'whole-script';
    }
  }
  if (commands.length === 0) {
    throw new TbrlError('no-solution', `The reference solution of task ${task.id} is empty.`, 'Put the commands that solve the task in the solution file.');
  }
  const turns = commands.map((cmd) => bashTurn(cmd, timeoutSecs));
  turns[turns.length - 1] += `\n${finishTurn('Ran the reference solution.')}`;
  return { turns, mode };
}

/** A heredoc delimiter that cannot occur in the script, so any script text passes through verbatim. */
function wholeScript(script: string): string {
  let delim = 'TBRL_SOLUTION_EOF';
  while (script.includes(delim)) delim += '_';
  return `bash <<'${delim}'\n${script.replace(/\n?$/, '\n')}${delim}`;
}

export function bashTurn(cmd: string, timeoutSecs?: number): string {
  const body: Record<string, unknown> = { cmd };
  if (timeoutSecs !== undefined) body.timeout_secs = timeoutSecs;
  return `<bash>\n${stringify(body, { lineWidth: 0 })}</bash>`;
}

export function finishTurn(message: string): string {
  return `<finish>\n${stringify({ message }, { lineWidth: 0 })}</finish>`;
}

export function createOraclePolicy(task: Task): ScriptedPolicy {
  const { turns, mode } = oracleTurns(task);
  const how = mode === 'split' ? `${turns.length} command(s) from the reference solution` : mode === 'commands' ? `${turns.length} command(s) from solution.yaml` : 'the reference solution as one script';
  return new ScriptedPolicy(turns, { kind: 'oracle', description: `oracle policy: runs ${how}` });
}
