import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { scaffoldTask } from '../tasks/scaffold';
import { serializeTestWeights } from '../tasks/weights';
import { DEFAULT_TASK_FORMAT, requireTaskFormat } from '../tasks/formats';
import type { WritableFormat } from '../tasks/write';
import { collectContext } from '../sandbox/build-context';
import { ansiCQuote as bashQuote } from '../sandbox/bash-quote';
import { TbrlError } from '../errors';
import { CHANGES_FILE, readWorkspaceRun, type WorkspaceRunRecord } from './run-workspace';
import { parseWorkspacePatch, planWorkspacePatch } from './workspace-patch';

const WORKSPACE_DIR = 'workspace';
const PYTEST = 'python3 -m pytest -p no:cacheprovider -rA "$TEST_DIR/test_outputs.py"';

export interface SaveTaskResult {
  dir: string;
  format: WritableFormat;
  warnings: string[];
}

/** The project as the agent saw it, without VCS metadata (the task image does not need history). */
function snapshotWorkspace(from: string, to: string, runOutput: string[]): Map<string, Buffer> {
  const text = new Map<string, Buffer>();
  const skipped = ['.git', ...runOutput];
  for (const f of collectContext(from, { ignore: (p) => skipped.some((s) => p === s || p.startsWith(`${s}/`)) })) {
    const target = join(to, f.path);
    if (f.kind === 'directory') mkdirSync(target, { recursive: true });
    else if (f.kind === 'file') {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, f.content!);
      chmodSync(target, f.mode);
      text.set(f.path, f.content!);
    }
  }
  return text;
}

function dockerfile(record: WorkspaceRunRecord, warnings: string[]): string {
  const dc = record.devcontainer;
  let head: string;
  if (dc.build) {
    head = readFileSync(dc.build.dockerfile, 'utf8').trimEnd();
    if (Object.keys(dc.build.args).length) warnings.push(`Build args of ${dc.configPath} are not carried into the task Dockerfile: ${Object.keys(dc.build.args).join(', ')}. Set them with ARG defaults.`);
    warnings.push(`The Dockerfile comes from ${dc.build.dockerfile}; COPY lines in it now resolve against the task's build context (the workspace is under ${WORKSPACE_DIR}/).`);
  } else head = `FROM ${dc.image}`;
  return `${head}\n\n# The project as it was when the agent ran (tbrl save-task).\nCOPY ${WORKSPACE_DIR}/ ${record.containerPath}/\nWORKDIR ${record.containerPath}\n`;
}

function testFile(record: WorkspaceRunRecord): { py: string; weights: Record<string, number> } {
  if (record.verifyCommand) {
    return {
      py: `"""Saved from a workspace run: the verify command decides. Add finer-grained tests with their weights."""
import subprocess

VERIFY = ${JSON.stringify(record.verifyCommand)}


def test_verify_command():
    r = subprocess.run(VERIFY, shell=True, cwd=${JSON.stringify(record.containerPath)})
    assert r.returncode == 0, f"{VERIFY} exited with {r.returncode}"
`,
      weights: { test_verify_command: 1 },
    };
  }
  return {
    py: `"""Saved from a workspace run without a verify command: write the tests (validation flags this file until then)."""


def test_todo():
    assert False, "TODO: replace with tests that pass on the reference solution and fail on the unchanged workspace"
`,
    weights: { test_todo: 1 },
  };
}

/** Writes the final content of each changed file: the base images need neither git nor patch. */
function solutionScript(record: WorkspaceRunRecord, changes: string, before: Map<string, Buffer>): string {
  const plan = planWorkspacePatch(parseWorkspacePatch(changes), (p) => before.get(p));
  const lines = ['#!/bin/bash', '# The final state of the workspace run this task was saved from (its changes.patch, applied).', 'set -euo pipefail', `cd ${bashQuote(record.containerPath)}`];
  for (const c of plan) {
    const path = bashQuote(c.path);
    if (c.after === null) lines.push(`rm -f ${path}`);
    else {
      lines.push(`mkdir -p "$(dirname ${path})"`);
      lines.push(`base64 -d > ${path} <<'TBRL_EOF'`, Buffer.from(c.after).toString('base64').replace(/(.{76})/g, '$1\n').trimEnd(), 'TBRL_EOF');
    }
  }
  return lines.join('\n') + '\n';
}

/**
 * A task directory from a workspace run: its instruction, the devcontainer's image with the
 * workspace copied in, a weighted pytest scaffold and the run's final state as the reference solution.
 */
export async function saveWorkspaceRunAsTask(runDir: string, outDir: string, format: WritableFormat = DEFAULT_TASK_FORMAT): Promise<SaveTaskResult> {
  const { record, changes } = readWorkspaceRun(resolve(runDir));
  if (!changes.trim()) throw new TbrlError('RUN_HAS_NO_CHANGES', `The run in ${runDir} changed nothing in the workspace (its ${CHANGES_FILE} is empty), so there is no reference solution.`, 'Save a run whose agent changed files.');
  if (!existsSync(record.workspaceFolder)) throw new TbrlError('WORKSPACE_MISSING', `The run's workspace ${record.workspaceFolder} no longer exists; the task's starting state is copied from it.`, 'Restore the folder, or re-run the agent on the project where it is now.');
  const warnings: string[] = [];
  const out = resolve(outDir);
  const scaffold = await scaffoldTask(out, { format, instruction: record.instruction });
  const adapter = requireTaskFormat(format);
  const envDir = join(out, adapter.savedRun.environmentDir);
  const before = snapshotWorkspace(record.workspaceFolder, join(envDir, WORKSPACE_DIR), record.runOutput ?? []);
  let solution: string;
  try {
    solution = solutionScript(record, changes, before);
  } catch (err) {
    if (err instanceof TbrlError && err.code === 'PATCH_CONFLICT') {
      throw new TbrlError(err.code, `${err.message} (the workspace is the task's starting state, so it must be as it was before the run)`, 'If you already applied the changes, revert them (e.g. git stash) before saving the task, then save it again into a new folder.');
    }
    throw err;
  }
  const tests = testFile(record);
  const cd = `cd ${bashQuote(record.containerPath)}`;
  const files = adapter.savedRun.files({
    dockerfile: dockerfile(record, warnings), tests: tests.py, weights: serializeTestWeights(tests.weights),
    solution, changes, changesFile: CHANGES_FILE, cd, pytest: PYTEST,
  });
  for (const [path, content] of Object.entries(files)) {
    const target = join(out, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    if (path.endsWith('.sh')) chmodSync(target, 0o755);
  }
  if (!record.verifyCommand) warnings.push('No verify command: tests/test_outputs.py has a failing TODO test; write the real tests before validating.');
  return { dir: scaffold.dir, format, warnings };
}
