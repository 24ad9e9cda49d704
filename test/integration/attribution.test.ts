/**
 * The end-of-run snapshot against real Docker: the oracle solves the example task through runTask,
 * the container is gone afterwards, and the run directory still holds what the agent wrote, with
 * per-line attribution matching it, and each file's original from the image (for a fork: from the
 * root run's image, not the checkpoint it started from).
 */
import { forkRunOk, runTaskOk, runWorkspaceOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import Docker from 'dockerode';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { lineAttribution } from '../../src/core/attribution/lines';
import { changedFileView, originalFilePath, readSnapshotIndex, SNAPSHOT_INDEX } from '../../src/core/attribution/snapshot';
import { LABEL_RUN } from '../../src/core/sandbox/types';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-attr-it-'));
const docker = new Docker();
const runIds: string[] = [];
after(async () => {
  // Newest run first: a fork's checkpoints are children of its source's images.
  for (const runId of runIds.reverse()) {
    const imgs = await docker.listImages({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`, 'dev.tbrl.kind=checkpoint'] } });
    for (const img of imgs) await docker.getImage(img.Id).remove({ force: true }).catch(() => undefined);
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** Every container of a run, whatever its kind (sandbox, tracer, baseline, originals). */
async function containersOf(runId: string): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`] } });
  return list.map((c) => `${c.Labels['dev.tbrl.kind'] ?? '?'} ${c.Id.slice(0, 12)}`);
}

/** The example's notes as its Dockerfile COPYs them into the image. */
const NOTES_IN_IMAGE = readFileSync(join(EXAMPLE, 'data', 'notes.md'), 'utf8');
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST } as NodeJS.ProcessEnv;

/** What the oracle's heredoc writes to /app/wordfreq.py, read from the task's own solution. */
function expectedScript(): string {
  const solution = readFileSync(join(EXAMPLE, 'solution.sh'), 'utf8');
  const m = /cat > \/app\/wordfreq\.py <<'PY'\n([\s\S]*?)\nPY\n/.exec(solution);
  assert.ok(m, 'solution.sh still writes wordfreq.py with a heredoc');
  return m[1] + '\n';
}

test('runTask leaves the final content of every changed file in <run>/files/ with an index', async () => {
  const outDir = join(scratch, 'run');
  const r = await runTaskOk({ taskDir: EXAMPLE, outDir, env, cwd: scratch, policy: 'oracle' });
  assert.equal(r.footer.reward?.total, 1, JSON.stringify(r.footer.reward));
  const script = join(outDir, 'files', 'app', 'wordfreq.py');
  assert.ok(existsSync(script), `${script} exists`);
  assert.equal(readFileSync(script, 'utf8'), expectedScript());

  const index = readSnapshotIndex(outDir);
  assert.ok(index, `${SNAPSHOT_INDEX} is readable`);
  const entry = index.files.find((f) => f.path === '/app/wordfreq.py');
  assert.ok(entry, JSON.stringify(index));
  assert.equal(entry.bytes, Buffer.byteLength(expectedScript()));
  assert.ok(index.files.some((f) => f.path === '/app/out/counts.json'), 'outputs written by the script are kept too');
  for (const f of index.files) assert.ok(existsSync(join(outDir, 'files', f.path)), `${f.path} stored`);
  // The image has none of them: every one was created by the oracle, so each diffs against nothing.
  for (const f of index.files) {
    assert.deepEqual(f.original, { status: 'absent' }, `${f.path}: ${JSON.stringify(f.original)}`);
    assert.equal(existsSync(originalFilePath(outDir, f.path)!), false);
  }
  assert.deepEqual(changedFileView(index, '/app/wordfreq.py'), { kind: 'diff', original: 'empty' });
  // The header names the exact image the container was created from.
  const taskImage = await docker.getImage(r.header.sandbox!.image).inspect();
  assert.deepEqual(r.header.sandbox?.originalImage, { name: r.header.sandbox!.image, id: taskImage.Id });
  assert.deepEqual(await containersOf(r.runId), [], 'no container of the run is left, the originals one included');

  // Attribution agrees with the snapshot: one line per line of the file, all by the step that ran the heredoc.
  const t = await readTrajectory(r.trajectoryPath);
  const a = lineAttribution(t, '/app/wordfreq.py');
  const lines = expectedScript().split('\n').length - 1;
  assert.equal(a.lines.length, lines);
  const writer = t.steps.findIndex((s) => s.actions.some((x) => typeof x.input.cmd === 'string' && x.input.cmd.includes('cat > /app/wordfreq.py')));
  assert.ok(writer >= 0);
  assert.ok(a.lines.every((l) => l.step === writer), JSON.stringify(a.lines.map((l) => l.step)));
  assert.match(a.lines[0].command ?? '', /cat > \/app\/wordfreq\.py/);
  // The verifier checks the outputs the script produced, so the script's lines reached E.
  assert.equal(a.eKnown, true);
  assert.ok(a.lines.every((l) => l.reachedE), JSON.stringify(a.lines.map((l) => l.via)));
});

const bash = (cmd: string) => `<bash>\ncmd: ${JSON.stringify(cmd)}\n</bash>`;
const FINISH = '<finish>\nmessage: done\n</finish>';

test('a file that was in the image keeps its original; a fork takes originals from the root image, not its checkpoint', async () => {
  // Step 0 edits a file the image has and creates one it has not; the fork starts after step 0.
  const src = await runTaskOk({
    taskDir: EXAMPLE, outDir: join(scratch, 'edit'), env, cwd: scratch, skipReward: true, checkpoint: true,
    policyOverride: new ScriptedPolicy([bash("sed -i '1s/.*/# Provenance (edited)/' /app/data/notes.md && echo new > /app/new.txt"), FINISH]),
  });
  runIds.push(src.runId);
  assert.equal(src.footer.endReason, 'finished');
  const index = readSnapshotIndex(src.outDir)!;
  const notes = index.files.find((f) => f.path === '/app/data/notes.md');
  assert.ok(notes, JSON.stringify(index));
  assert.deepEqual(notes.original, { status: 'stored', bytes: Buffer.byteLength(NOTES_IN_IMAGE) });
  assert.equal(readFileSync(originalFilePath(src.outDir, '/app/data/notes.md')!, 'utf8'), NOTES_IN_IMAGE);
  assert.match(readFileSync(join(src.outDir, 'files/app/data/notes.md'), 'utf8'), /^# Provenance \(edited\)\n/);
  assert.deepEqual(index.files.find((f) => f.path === '/app/new.txt')?.original, { status: 'absent' });
  assert.equal(src.warnings.filter((w) => /Originals left out/.test(w)).length, 0, src.warnings.join('\n'));
  assert.deepEqual(await containersOf(src.runId), []);

  // The fork's container is step 0's checkpoint (notes already edited, new.txt already there).
  const fork = await forkRunOk({
    trajectoryPath: src.trajectoryPath, step: 0, outDir: join(scratch, 'fork'), env, cwd: scratch, skipReward: true,
    // Turns are by step index; step 0 is copied from the source run, never asked for.
    policyOverride: new ScriptedPolicy(['', bash('echo more >> /app/data/notes.md'), FINISH]),
  });
  runIds.push(fork.runId);
  assert.notEqual(fork.header.sandbox?.image, src.header.sandbox?.image, 'the fork runs on a checkpoint image');
  assert.deepEqual(fork.header.sandbox?.originalImage, src.header.sandbox?.originalImage);
  const forked = readSnapshotIndex(fork.outDir)!;
  assert.deepEqual(forked.files.find((f) => f.path === '/app/data/notes.md')?.original, { status: 'stored', bytes: Buffer.byteLength(NOTES_IN_IMAGE) });
  assert.equal(readFileSync(originalFilePath(fork.outDir, '/app/data/notes.md')!, 'utf8'), NOTES_IN_IMAGE);
  assert.match(readFileSync(join(fork.outDir, 'files/app/data/notes.md'), 'utf8'), /^# Provenance \(edited\)\n[\s\S]*more\n$/);
  assert.deepEqual(forked.files.find((f) => f.path === '/app/new.txt')?.original, { status: 'absent' }, 'created in the source run, so absent from the root image');
  assert.deepEqual(await containersOf(fork.runId), []);
});

test('a workspace run takes the originals of project files from the host folder it copied in', async () => {
  const project = join(scratch, 'proj');
  mkdirSync(join(project, '.devcontainer'), { recursive: true });
  writeFileSync(join(project, '.devcontainer', 'devcontainer.json'), '{ "image": "tbrl-standin/python:3", "workspaceFolder": "/workspaces/proj" }\n');
  const status = 'line one\nstatus: broken\n';
  writeFileSync(join(project, 'status.txt'), status);
  const r = await runWorkspaceOk({
    workspaceFolder: project, instruction: 'Fix the status.', outDir: join(scratch, 'ws-run'), env, cwd: scratch,
    policyOverride: new ScriptedPolicy([bash('sed -i s/broken/fixed/ status.txt && echo hi > added.txt'), FINISH]),
  });
  runIds.push(r.runId);
  const index = readSnapshotIndex(r.outDir)!;
  // The image has no /workspaces/proj/status.txt: read from the image it would wrongly count as created.
  assert.deepEqual(index.files.find((f) => f.path === '/workspaces/proj/status.txt')?.original, { status: 'stored', bytes: Buffer.byteLength(status) });
  assert.equal(readFileSync(originalFilePath(r.outDir, '/workspaces/proj/status.txt')!, 'utf8'), status);
  assert.match(readFileSync(join(r.outDir, 'files/workspaces/proj/status.txt'), 'utf8'), /status: fixed/);
  assert.deepEqual(index.files.find((f) => f.path === '/workspaces/proj/added.txt')?.original, { status: 'absent' });
  assert.deepEqual(await containersOf(r.runId), []);
});
