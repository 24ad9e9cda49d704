import { resolve } from 'node:path';
import { TbrlError } from '../errors';
import type { AgentState } from '../actions/types';
import type { ChatMessage } from '../model/types';
import { initialMessages } from '../agent/prompt';
import type { Checkpoint, Sandbox } from '../sandbox/types';
import { ansiCQuote } from '../sandbox/bash-quote';
import type { Task } from '../tasks/model';
import { readTrajectory, type Trajectory } from '../trajectory/reader';
import { stepObservation } from '../trajectory/observation';
import type { StepRecord } from '../trajectory/schema';

export interface ForkSource {
  /** trajectory.jsonl of the run to branch from. */
  trajectoryPath: string;
  /** Step whose checkpoint the new run starts from; it and every step before it are copied. */
  step: number;
}

export interface PreparedFork {
  source: Trajectory;
  checkpoint: Checkpoint;
  /** Steps 0..k, copied verbatim into the new trajectory. */
  copied: StepRecord[];
  state: AgentState;
}

const CHECKPOINT_FIX = 'Re-run the task with checkpoints: `tbrl run <task> --checkpoint`, or `"checkpoint": true` in launch.json, then fork from that run.';

/** Reads the source run and checks that step k can be forked from (clear errors otherwise). */
export async function prepareFork(from: ForkSource, cwd = process.cwd()): Promise<PreparedFork> {
  const path = resolve(cwd, from.trajectoryPath);
  const source = await readTrajectory(path);
  const k = from.step;
  const last = source.steps.length - 1;
  if (!Number.isInteger(k) || k < 0 || k > last) {
    throw new TbrlError('fork-step', `${path} has steps 0..${last}; there is no step ${k} to fork from.`, `Pass a step in range, e.g. --step ${Math.max(0, last)}.`);
  }
  const copied = source.steps.slice(0, k + 1);
  const at = copied[k];
  if (at.index !== k) throw new TbrlError('fork-step', `${path}: the step on line ${k + 2} is numbered ${at.index}, not ${k}; the file was edited.`, 'Fork from an unedited trajectory written by `tbrl run`.');
  if (!at.checkpoint) {
    const why = at.checkpointError ? `its checkpoint failed (${at.checkpointError})` : 'the run was made without checkpoints';
    throw new TbrlError('fork-no-checkpoint', `Step ${k} of ${path} has no checkpoint: ${why}.`, CHECKPOINT_FIX);
  }
  if (!at.checkpointState) {
    throw new TbrlError('fork-no-checkpoint', `Step ${k} of ${path} has a checkpoint image but no shell state (cwd/env): it was written by an older tbrl.`, CHECKPOINT_FIX);
  }
  const checkpoint: Checkpoint = {
    imageId: at.checkpoint,
    runId: source.header.runId,
    step: k,
    createdAt: at.startedAt,
    cwd: at.checkpointState.cwd,
    env: at.checkpointState.env,
  };
  const maxTodo = at.todos.reduce((m, t) => Math.max(m, t.id), 0);
  const state: AgentState = { todos: at.todos.map((t) => ({ ...t })), nextTodoId: maxTodo + 1, scratchpad: [...at.scratchpad] };
  return { source, checkpoint, copied, state };
}

/**
 * The conversation the policy had seen once `steps` ran, built exactly as the agent loop builds
 * it (assistant turn, then the step's observation unless the turn had no action at all).
 */
export function conversationThrough(systemPrompt: string, task: Task, steps: StepRecord[], previousAttempt?: string): ChatMessage[] {
  const messages = initialMessages(systemPrompt, task, previousAttempt);
  for (const s of steps) {
    messages.push({ role: 'assistant', content: s.chosenText });
    if (s.actions.length > 0 || s.parseErrors.length > 0) messages.push({ role: 'user', content: stepObservation(s) });
  }
  return messages;
}

// Variables each shell sets for itself; restoring them would lie about the new shell.
const SHELL_OWN = new Set(['PWD', 'OLDPWD', 'SHLVL', '_', 'HOSTNAME', 'HOME']);

/**
 * The provider restores cwd/env in the container's own shell, but a traced sandbox runs the agent's
 * commands in a shell of its own (strace shell mode): the state is applied again through the
 * sandbox the agent will use, so it holds whichever shell that is.
 */
export async function restoreShellState(sandbox: Sandbox, checkpoint: Checkpoint): Promise<void> {
  const lines = Object.entries(checkpoint.env)
    .filter(([k]) => !SHELL_OWN.has(k) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `export ${k}=${ansiCQuote(v)}`);
  lines.push(`cd -- ${ansiCQuote(checkpoint.cwd)}`);
  const r = await sandbox.exec(lines.join('\n'), { timeoutMs: 30_000, trace: false });
  if (r.exitCode !== 0) throw new TbrlError('fork-shell-state', `Could not restore the shell state of step ${checkpoint.step} (cwd ${checkpoint.cwd}): ${r.output.trim()}`, 'The checkpoint image may be damaged; fork from another step or re-run with --checkpoint.');
}
