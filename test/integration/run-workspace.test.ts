/**
 * The agent on a user's own project: a temp workspace with a devcontainer (the stand-in image), a
 * scripted agent that edits files in the copied workspace, the verify command as the reward, the
 * changes as a patch, and `save-task` turning the run into a task that validates in Docker.
 */
import { runWorkspaceOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { saveWorkspaceRunAsTask } from '../../src/core/run/save-task';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { loadTask } from '../../src/core/tasks/load';
import { validateTask } from '../../src/core/tasks/validate';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-ws-it-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST } as NodeJS.ProcessEnv;

const workspace = join(scratch, 'proj');
mkdirSync(join(workspace, '.devcontainer'), { recursive: true });
writeFileSync(join(workspace, '.devcontainer', 'devcontainer.json'), '{\n  // JSONC\n  "image": "tbrl-standin/python:3",\n  "workspaceFolder": "/workspaces/proj",\n}\n');
writeFileSync(join(workspace, 'status.txt'), 'line one\nstatus: broken\nline three\n');
writeFileSync(join(workspace, 'obsolete.txt'), 'remove me\n');
const original = () => ({ status: readFileSync(join(workspace, 'status.txt'), 'utf8'), obsolete: existsSync(join(workspace, 'obsolete.txt')), notes: existsSync(join(workspace, 'notes.md')) });
const before = original();

const VERIFY = 'grep -q "status: fixed" status.txt';
const FIX = [
  '<bash>\ncmd: sed -i "s/broken/fixed/" status.txt && echo "# notes" > notes.md && rm obsolete.txt\n</bash>',
  '<finish>\nmessage: fixed\n</finish>',
];

test('a scripted agent fixes the copied workspace: verify reward 1, host untouched, changes.patch applies; save-task validates', async () => {
  const r = await runWorkspaceOk({ workspaceFolder: workspace, instruction: 'Set the status to fixed.', verifyCommand: VERIFY, outDir: join(scratch, 'run-fix'), env, cwd: scratch, policyOverride: new ScriptedPolicy(FIX), trace: false });
  assert.equal(r.footer.endReason, 'finished', r.footer.endMessage);
  assert.deepEqual(original(), before, 'the host workspace is untouched');
  assert.equal(r.footer.reward?.total, 1, JSON.stringify(r.footer.reward));
  assert.equal(r.footer.reward?.tests, 1);
  assert.deepEqual(r.footer.reward?.testOutcomes, [{ name: VERIFY, status: 'passed', weight: 1 }]);
  assert.equal((await readTrajectory(r.trajectoryPath)).footer?.reward?.total, 1, 'the reward is in the trajectory footer');
  assert.equal(r.header.task.format, 'devcontainer');
  assert.equal(r.header.sandbox?.workspaceMode, 'copy');

  const patch = readFileSync(r.changesPath, 'utf8');
  assert.equal(patch, r.changes);
  assert.deepEqual([...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]), ['notes.md', 'obsolete.txt', 'status.txt']);
  const copy = join(scratch, 'copy');
  cpSync(workspace, copy, { recursive: true });
  execFileSync('git', ['apply', '--check', r.changesPath], { cwd: copy });
  execFileSync('git', ['apply', r.changesPath], { cwd: copy });
  assert.equal(readFileSync(join(copy, 'status.txt'), 'utf8'), 'line one\nstatus: fixed\nline three\n');
  assert.equal(existsSync(join(copy, 'obsolete.txt')), false);

  const taskDir = join(scratch, 'saved-task');
  const saved = await saveWorkspaceRunAsTask(r.outDir, taskDir, 'terminal-bench');
  const task = await loadTask(saved.dir);
  assert.equal(task.instruction, 'Set the status to fixed.');
  assert.match(readFileSync(join(taskDir, 'Dockerfile'), 'utf8'), /^FROM tbrl-standin\/python:3\n[\s\S]*COPY workspace\/ \/workspaces\/proj\//);
  assert.equal(readFileSync(join(taskDir, 'workspace', 'status.txt'), 'utf8'), before.status, 'the starting state is the workspace before the run');
  assert.deepEqual(JSON.parse(readFileSync(join(taskDir, 'test_weights.json'), 'utf8')), { test_verify_command: 1 });
  // Full validation: the image builds, the reference solution (the run's final state) passes and doing nothing fails.
  const v = await validateTask(taskDir, { provider: new DockerSandboxProvider(), oracle: 'script' });
  assert.equal(v.static.status, 'passed', JSON.stringify(v.static.findings));
  assert.equal(v.oracle.score, 1, JSON.stringify(v.oracle));
  assert.equal(v.empty.score, 0, JSON.stringify(v.empty));
  assert.ok(v.valid, v.problems.join('\n'));
});

test('the verify command failing scores 0; without one the reward is not computed and save-task writes a failing TODO test', async () => {
  const failed = await runWorkspaceOk({ workspaceFolder: workspace, instruction: 'Look around.', verifyCommand: VERIFY, outDir: join(scratch, 'run-nothing'), env, cwd: scratch, policyOverride: new ScriptedPolicy(['<finish>\nmessage: nothing\n</finish>']), trace: false });
  assert.equal(failed.footer.reward?.total, 0);
  assert.deepEqual(failed.footer.reward?.testOutcomes, [{ name: VERIFY, status: 'failed', weight: 1 }]);
  assert.equal(failed.changes, '', 'nothing changed');

  // The default runs/ inside the project: the run's own output is not a change of the agent's.
  const r = await runWorkspaceOk({ workspaceFolder: workspace, instruction: 'Set the status to fixed.', runsDir: join(workspace, 'runs'), env, cwd: scratch, policyOverride: new ScriptedPolicy(FIX), trace: false });
  assert.equal(r.footer.reward, undefined);
  assert.ok(r.warnings.some((w) => /reward was not computed/.test(w)));
  assert.deepEqual(original(), before);
  assert.deepEqual([...r.changes.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]), ['notes.md', 'obsolete.txt', 'status.txt']);
  const taskDir = join(scratch, 'saved-todo');
  await saveWorkspaceRunAsTask(r.outDir, taskDir, 'harbor');
  assert.equal((await loadTask(taskDir)).format, 'harbor');
  assert.equal(existsSync(join(taskDir, 'environment', 'workspace', 'runs')), false, 'run output is not part of the task image');
  assert.ok(existsSync(join(taskDir, 'environment', 'workspace', 'status.txt')));
  assert.match(readFileSync(join(taskDir, 'tests', 'test_outputs.py'), 'utf8'), /def test_todo\(\):\n\s+assert False/);
});

test('a Python run leaves __pycache__ and a binary file: the patch skips caches and .gitignore paths, and git apply --check passes', async () => {
  const proj = join(scratch, 'pyproj');
  mkdirSync(join(proj, '.devcontainer'), { recursive: true });
  writeFileSync(join(proj, '.devcontainer', 'devcontainer.json'), '{"image": "tbrl-standin/python:3", "workspaceFolder": "/workspaces/pyproj"}\n');
  writeFileSync(join(proj, '.gitignore'), 'build/\n');
  writeFileSync(join(proj, 'helper.py'), 'VALUE = 1\n');
  const turns = [
    '<bash>\ncmd: python3 -c "import helper" && mkdir -p build && echo out > build/out.txt && printf \'\\000\\001\\002\\377\' > blob.bin && echo "VALUE = 2" > helper.py\n</bash>',
    '<finish>\nmessage: done\n</finish>',
  ];
  const r = await runWorkspaceOk({ workspaceFolder: proj, instruction: 'Bump the value.', outDir: join(scratch, 'run-py'), env, cwd: scratch, policyOverride: new ScriptedPolicy(turns), trace: false });
  assert.equal(r.footer.endReason, 'finished', r.footer.endMessage);
  assert.deepEqual([...r.changes.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]), ['blob.bin', 'helper.py'], r.changes);
  assert.match(r.changes, /^GIT binary patch$/m);
  const copy = join(scratch, 'pyproj-copy');
  cpSync(proj, copy, { recursive: true });
  execFileSync('git', ['apply', '--check', r.changesPath], { cwd: copy });
  execFileSync('git', ['apply', r.changesPath], { cwd: copy });
  assert.deepEqual(readFileSync(join(copy, 'blob.bin')), Buffer.from([0, 1, 2, 255]));
  assert.equal(readFileSync(join(copy, 'helper.py'), 'utf8'), 'VALUE = 2\n');
});
