import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import type { ActionRecord, StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';
import type { CommandTrace, FileWrite } from '../../src/core/trace/types';
import type { GraphView } from '../../src/core/depgpo/view';
import type { AdvantageExport } from '../../src/core/depgpo/credit';

const dir = mkdtempSync(join(tmpdir(), 'tbrl-depgpo-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const create = (path: string, lines: number): FileWrite => ({ path, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: lines }], created: true, linesAfter: lines });
const trace = (t: Partial<CommandTrace>): CommandTrace => ({ reads: [], writes: [], stdoutValues: [], ports: [], processes: [], ...t });
const bash = (cmd: string, t?: Partial<CommandTrace>): ActionRecord => ({ kind: 'bash', input: { cmd }, observation: '', ok: true, exitCode: 0, durationMs: 5, ...(t ? { trace: trace(t) } : {}) });
const todo: ActionRecord = { kind: 'todo', input: { operations: [] }, observation: '', ok: true, durationMs: 0 };

function writeTrajectory(name: string, opts: { taskId: string; runId: string; steps: Array<{ actions: ActionRecord[]; tokens: number }>; reward: number; verifierReads?: string[]; traced?: boolean }): string {
  const header: TrajectoryHeader = {
    type: 'header', schema: 'tbrl.trajectory/1.0', runId: opts.runId, startedAt: '2026-11-30T00:00:00Z',
    task: { id: opts.taskId, dir: '/tasks/x', format: 'terminal-bench', instruction: 'Build /app/out.txt from the config.' },
    policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0.1.0', node: process.version },
    sandbox: { image: 'debian:bookworm-slim', tracing: opts.traced === false ? { available: false, reason: 'no tracer' } : { available: true, method: 'strace' } },
  };
  const steps: StepRecord[] = opts.steps.map((s, index) => ({
    type: 'step', index, startedAt: '2026-11-30T00:00:01Z', durationMs: 10,
    candidates: [{ text: 'x', completionTokens: s.tokens, parses: true }],
    decision: { mode: 'none', chosen: 0, scores: [1], calls: 0, outputTokens: 0, parallelOutputTokens: 0 },
    chosenText: 'x', actions: s.actions, parseErrors: [], usage: { promptTokens: 100, completionTokens: s.tokens * 4 }, todos: [], scratchpad: [],
  }));
  const footer: TrajectoryFooter = {
    type: 'footer', endedAt: '2026-11-30T00:01:00Z', endReason: 'finished', steps: steps.length,
    reward: { tests: opts.reward, weights: { tests: 1, judge: 0 }, total: opts.reward },
    ...(opts.verifierReads ? { verifierTrace: { reads: opts.verifierReads, writes: [], ports: [], processes: [] } } : {}),
    usage: { promptTokens: 0, completionTokens: 0, verifierCalls: 0, verifierOutputTokens: 0 },
  };
  const path = join(dir, name, 'trajectory.jsonl');
  mkdirSync(join(dir, name), { recursive: true });
  writeFileSync(path, [header, ...steps, footer].map((r) => JSON.stringify(r)).join('\n') + '\n');
  return path;
}

// Passing run: c0 writes config (step 0), a todo (step 1), c1 builds out.txt from config (step 2),
// c2 lists /tmp (step 3), c3 writes notes (step 4). E = {out.txt}: c0 gets indirect credit through c1.
// s = [1 0 1 0 0], f = [2.5 0 2.5 0 0]; chosen-candidate tokens [40 10 20 10 20]: Z = (100 + 50)/100 = 1.5.
const pass = writeTrajectory('pass', {
  taskId: 'build', runId: 'run-pass', reward: 1, verifierReads: ['/app/out.txt'],
  steps: [
    { tokens: 40, actions: [bash('python3 gen.py > /app/config.json', { writes: [create('/app/config.json', 4)] })] },
    { tokens: 10, actions: [todo] },
    { tokens: 20, actions: [bash('python3 build.py', { reads: ['/app/config.json'], writes: [create('/app/out.txt', 2)] })] },
    { tokens: 10, actions: [bash('ls /tmp', { stdoutValues: ['/tmp/junk-1'] })] },
    { tokens: 20, actions: [{ kind: 'file.write', input: { file_path: '/app/notes.md', content: 'done' }, observation: '', ok: true, durationMs: 1, trace: trace({ writes: [create('/app/notes.md', 1)] }) }] },
  ],
});
// Failing run of the same task without tracing: every f_t = 1.
const fail = writeTrajectory('fail', {
  taskId: 'build', runId: 'run-fail', reward: 0, traced: false,
  steps: [{ tokens: 10, actions: [bash('true')] }, { tokens: 10, actions: [bash('false')] }],
});
// A second passing run with 6 commands, 2 on a path to E (c0 -> c1 -> out2): fraction 1/3.
writeTrajectory('long', {
  taskId: 'other', runId: 'run-long', reward: 1, verifierReads: ['/app/out2.txt'],
  steps: [
    { tokens: 5, actions: [bash('mktemp', { stdoutValues: ['/tmp/tmp.Xy12'] })] },
    { tokens: 5, actions: [bash('make -C /tmp/tmp.Xy12', { writes: [create('/app/out2.txt', 3)] })] },
    { tokens: 5, actions: [bash('ls', {}), bash('pwd', {})] },
    { tokens: 5, actions: [bash('cat /etc/os-release', { reads: ['/etc/os-release'] })] },
    { tokens: 5, actions: [bash('echo hi > /tmp/x', { writes: [create('/tmp/x', 1)] })] },
  ],
});

async function capture(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void lines.push(a.join(' '));
  try {
    const code = await main(argv);
    return { code, out: lines.join('\n') };
  } finally {
    console.log = log;
  }
}

test('tbrl graph prints edges, E, scores and factors and writes DOT and JSON for the webview', async () => {
  const dot = join(dir, 'g.dot');
  const json = join(dir, 'g.json');
  const { code, out } = await capture(['graph', pass, '--dot', dot, '--json', json]);
  assert.equal(code, 0);
  assert.match(out, /c0 -> c1 {2}file {3}\/app\/config\.json/);
  assert.match(out, /E: files \/app\/out\.txt/);
  assert.match(out, /Z = 1\.5/);
  const view = JSON.parse(readFileSync(json, 'utf8')) as GraphView;
  assert.deepEqual(view.nodes.map((n) => [n.id, n.step, n.score, n.factor]), [['c0', 0, 1, 2.5], ['c1', 2, 1, 2.5], ['c2', 3, 0, 0], ['c3', 4, 0, 0]]);
  assert.deepEqual(view.nodes[1].reads, ['/app/config.json']);
  assert.deepEqual(view.nodes[1].writes, [{ path: '/app/out.txt', lines: 2, created: true }]);
  assert.deepEqual(view.edges, [{ source: 'c0', target: 'c1', kind: 'file', labels: ['/app/config.json'], labelCount: 1 }]);
  assert.deepEqual(view.sinks, [{ id: 'E:file:/app/out.txt', kind: 'file', name: '/app/out.txt' }]);
  assert.deepEqual(view.paths, [{ from: 'c0', path: ['c0', 'c1', 'E:file:/app/out.txt'] }, { from: 'c1', path: ['c1', 'E:file:/app/out.txt'] }]);
  assert.deepEqual(view.steps.map((s) => [s.score, s.factor, s.tokens]), [[1, 2.5, 40], [0, 0, 10], [1, 2.5, 20], [0, 0, 10], [0, 0, 20]]);
  assert.equal(view.onPathFraction, 0.5);
  const dotText = readFileSync(dot, 'utf8');
  assert.match(dotText, /^digraph depgpo \{/);
  assert.match(dotText, /"c0" -> "c1" \[label="\/app\/config\.json"\]/);
  assert.match(dotText, /"c1" -> "E:file:\/app\/out\.txt"/);
});

test('tbrl credit gives group-relative and per-step DepGPO advantages', async () => {
  const out = join(dir, 'adv.json');
  const r = await capture(['credit', pass, join(dir, 'fail'), '--group-by', 'task', '-o', out]);
  assert.equal(r.code, 0);
  const adv = JSON.parse(readFileSync(out, 'utf8')) as AdvantageExport;
  // Rewards [1 0]: mean 0.5, sample std √0.5, Â = ±√0.5.
  assert.deepEqual(adv.groups.map((g) => [g.key, g.size, g.mean]), [['build', 2, 0.5]]);
  const [p, f] = adv.trajectories;
  assert.ok(Math.abs(p.groupAdvantage - Math.SQRT1_2) < 1e-12);
  // Â_t = f_t / Z · Â = [2.5/1.5 0 2.5/1.5 0 0] · √0.5.
  p.steps.forEach((s, i) => assert.ok(Math.abs(s.advantage - [5 / 3, 0, 5 / 3, 0, 0][i] * Math.SQRT1_2) < 1e-12, `step ${i}: ${s.advantage}`));
  assert.equal(f.fallback, 'tracing unavailable: no tracer');
  assert.deepEqual(f.steps.map((s) => s.factor), [1, 1]);
  f.steps.forEach((s) => assert.ok(Math.abs(s.advantage + Math.SQRT1_2) < 1e-12));
  // Without std normalisation: Â = R − mean = ±0.5.
  const noStd = join(dir, 'adv-nostd.json');
  await capture(['credit', pass, fail, '--no-std', '-o', noStd]);
  assert.deepEqual((JSON.parse(readFileSync(noStd, 'utf8')) as AdvantageExport).trajectories.map((t) => t.groupAdvantage), [0.5, -0.5]);
});

test('tbrl graph --stats reports the median fraction of commands on a path to E over passing runs', async () => {
  const { code, out } = await capture(['graph', '--stats', dir]);
  assert.equal(code, 0);
  // Passing, traced: pass (2 of 4) and long (2 of 6); fail is skipped. Medians: (0.5 + 1/3)/2 and 1/3.
  assert.match(out, /median 0\.417 \(n=2\); with 5\+ commands: median 0\.333 \(n=1\)/);
  assert.match(out, /skipped .*fail.*not passing/);
});

test('tbrl graph rejects bad input with a usage error', async () => {
  assert.equal((await capture(['graph'])).code, 2);
  assert.equal((await capture(['graph', pass, '--beta', '7'])).code, 2);
  assert.equal((await capture(['graph', join(dir, 'nope.jsonl')])).code, 1);
  assert.equal((await capture(['credit', pass, '--group-by', 'model'])).code, 2);
});
