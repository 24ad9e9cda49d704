import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { TbrlError } from '../errors';
import type { Task } from '../tasks/model';
import type { Sandbox } from '../sandbox/types';
import type { RewardRecord } from '../trajectory/schema';
import { findDevcontainerConfig, parseDevcontainer, type DevcontainerConfig } from '../sandbox/devcontainer-config';
import { workspacePatch } from '../sandbox/workspace';
import { runTask, type RunOutcome, type RunTaskOptions, type RunTaskResult } from './run-task';

export const CHANGES_FILE = 'changes.patch';
export const WORKSPACE_RUN_FILE = 'workspace-run.json';

/** What `save-task` needs to turn a workspace run into a task, written next to the trajectory. */
export interface WorkspaceRunRecord {
  workspaceFolder: string;
  instruction: string;
  verifyCommand?: string;
  containerPath: string;
  devcontainer: { configPath: string; image?: string; build?: { dockerfile: string; context: string; args: Record<string, string> } };
  changes: string;
  /** Workspace paths that are run output (the runs directory inside the project), left out of a saved task. */
  runOutput?: string[];
}

export interface RunWorkspaceOptions extends Omit<RunTaskOptions, 'taskDir' | 'task' | 'sandboxImage' | 'scoreRun' | 'beforeClose'> {
  workspaceFolder: string;
  instruction: string;
  /** Run in the container after the agent, in the workspace: exit 0 scores 1, anything else 0. */
  verifyCommand?: string;
  /** devcontainer.json relative to the workspace (default .devcontainer/devcontainer.json). */
  devcontainerConfig?: string;
  verifyTimeoutSec?: number;
}

export interface RunWorkspaceResult extends RunTaskResult {
  changesPath: string;
  /** The agent's changes as a git-style patch of the host workspace ('' when nothing changed). */
  changes: string;
}

function workspaceTask(folder: string, config: DevcontainerConfig, instruction: string): Task {
  const environment: Task['environment'] = config.build
    ? { context: config.build.context, dockerfile: relative(config.build.context, config.build.dockerfile) }
    : { image: config.image! };
  return {
    id: basename(folder),
    dir: folder,
    format: 'devcontainer',
    instruction,
    tags: [],
    environment,
    agentTimeoutSec: 1800,
    testTimeoutSec: 600,
    // The user's own project: installing its dependencies usually needs the network.
    allowInternet: true,
    tests: { runner: join(folder, '.tbrl-no-tests'), dir: folder, kind: 'pytest-summary' },
    extra: {},
  };
}

/**
 * The run's own output (runs/ inside the project, the default) appears on the host during the run
 * but never in the container's copy: it is not a change of the agent's.
 */
function insideFolder(folder: string, path: string): string | undefined {
  const rel = relative(folder, path).split(sep).join('/');
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : undefined;
}

function withoutRunOutput(patch: string, folder: string, outDir: string): string {
  const rel = insideFolder(folder, outDir);
  if (!rel) return patch;
  return patch
    .split(/^(?=diff --git )/m)
    .filter((section) => !section.startsWith(`diff --git a/${rel}/`))
    .join('');
}

async function verifyReward(sandbox: Sandbox, command: string, cwd: string, timeoutSec: number): Promise<RewardRecord> {
  const r = await sandbox.execArgv(['sh', '-c', command], { cwd, timeoutMs: timeoutSec * 1000, maxOutputBytes: 64 * 1024 });
  const passed = r.exitCode === 0;
  const score = passed ? 1 : 0;
  return {
    tests: score,
    testOutcomes: [{ name: command, status: passed ? 'passed' : r.timedOut ? 'error' : 'failed', weight: 1 }],
    weights: { tests: 1, judge: 0 },
    total: score,
  };
}

/**
 * The agent on the user's own project: its devcontainer, the workspace copied in (the host files
 * are never written), an optional verify command as the reward, and the changes as a patch. Like
 * `runTask`, a run that failed comes back with its error beside the result.
 */
export async function runWorkspace(options: RunWorkspaceOptions): Promise<RunOutcome<RunWorkspaceResult>> {
  const { workspaceFolder, instruction, verifyCommand, devcontainerConfig, verifyTimeoutSec, ...rest } = options;
  const folder = resolve(options.cwd ?? process.cwd(), workspaceFolder);
  if (!existsSync(folder)) throw new TbrlError('WORKSPACE_MISSING', `${folder} does not exist.`, 'Pass the folder of your project, e.g. tbrl run-workspace . --instruction "fix the failing test"');
  if (!instruction.trim()) throw new TbrlError('INSTRUCTION_EMPTY', 'The instruction is empty.', 'Say what the agent should do, e.g. --instruction "make the tests in tests/ pass"');
  const config = parseDevcontainer(folder, findDevcontainerConfig(folder, devcontainerConfig), { allowPrivileges: rest.allowPrivileges });
  const task = workspaceTask(folder, config, instruction.trim());
  if (config.allowedPrivileges.length) task.extra.allowedPrivileges = config.allowedPrivileges;
  let changes = '';
  let changesPath = '';
  const { result, error } = await runTask({
    ...rest,
    // The oracle runs a task's reference solution, which a user's project does not have.
    policy: rest.policyOverride ? rest.policy : 'model',
    taskDir: folder,
    task,
    sandboxImage: { kind: 'devcontainer', workspaceFolder: folder, configPath: devcontainerConfig, allowPrivileges: rest.allowPrivileges },
    // No verify command: the footer has no reward and the summary says "not computed".
    skipReward: rest.skipReward || !verifyCommand,
    ...(verifyCommand ? { scoreRun: (sandbox: Sandbox) => verifyReward(sandbox, verifyCommand, config.workspaceFolder, verifyTimeoutSec ?? task.testTimeoutSec) } : {}),
    beforeClose: async (sandbox, outDir) => {
      changes = withoutRunOutput(await workspacePatch(sandbox, folder, config.workspaceFolder), folder, outDir);
      changesPath = join(outDir, CHANGES_FILE);
      writeFileSync(changesPath, changes);
      const record: WorkspaceRunRecord = {
        workspaceFolder: folder,
        instruction: task.instruction,
        ...(verifyCommand ? { verifyCommand } : {}),
        containerPath: config.workspaceFolder,
        devcontainer: { configPath: config.configPath, image: config.image, build: config.build },
        changes: CHANGES_FILE,
        ...(insideFolder(folder, dirname(outDir)) ? { runOutput: [insideFolder(folder, dirname(outDir))!] } : {}),
      };
      writeFileSync(join(outDir, WORKSPACE_RUN_FILE), JSON.stringify(record, null, 2) + '\n');
    },
  });
  if (!verifyCommand && !error) result.warnings.push('No verify command: the reward was not computed (pass --verify "<command>" to score the run).');
  return { result: { ...result, changes, changesPath }, ...(error ? { error } : {}) };
}

export function readWorkspaceRun(runDir: string): { record: WorkspaceRunRecord; changes: string } {
  const file = join(runDir, WORKSPACE_RUN_FILE);
  if (!existsSync(file)) {
    throw new TbrlError('NOT_A_WORKSPACE_RUN', `${runDir} has no ${WORKSPACE_RUN_FILE}: it is not the output of a workspace run (or the run ended before the changes were collected).`, 'Pass the run directory printed by `tbrl run-workspace` (or the editor command "TBRL: Run Agent on Workspace").');
  }
  const record = JSON.parse(readFileSync(file, 'utf8')) as WorkspaceRunRecord;
  return { record, changes: readFileSync(join(runDir, record.changes), 'utf8') };
}
