/**
 * The end-of-run snapshot against real Docker: the oracle solves the example task through runTask,
 * the container is gone afterwards, and the run directory still holds what the agent wrote, with
 * per-line attribution matching it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { runTask } from '../../src/core/run/run-task';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { lineAttribution } from '../../src/core/attribution/lines';
import { readSnapshotIndex, SNAPSHOT_INDEX } from '../../src/core/attribution/snapshot';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-attr-it-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
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
  const r = await runTask({ taskDir: EXAMPLE, outDir, env, cwd: scratch });
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
