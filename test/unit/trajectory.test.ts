import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { TrajectoryWriter } from '../../src/core/trajectory/writer';
import { parseTrajectory, readTrajectory } from '../../src/core/trajectory/reader';
import { toAtif, toEpisode } from '../../src/core/trajectory/export';
import { TbrlError } from '../../src/core/errors';
import { TRAJECTORY_SCHEMA } from '../../src/core/trajectory/schema';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';

function header(): TrajectoryHeader {
  return {
    type: 'header',
    schema: TRAJECTORY_SCHEMA,
    runId: 'run-1',
    startedAt: '2026-01-01T00:00:00.000Z',
    task: { id: 'hello', dir: '/tasks/hello', format: 'terminal-bench', instruction: 'Write hello to /app/hello.txt' },
    policy: { kind: 'scripted' },
    config: {},
    versions: { tbrl: '0.1.0', node: process.version, promptVersion: 'v1' },
    systemPrompt: 'You are an agent.',
  };
}

function step(index: number, extra: Partial<StepRecord> = {}): StepRecord {
  return {
    type: 'step',
    index,
    startedAt: '2026-01-01T00:00:01.000Z',
    durationMs: 10,
    candidates: [{ text: `<bash>cmd: echo ${index}</bash>`, parses: true, completionTokens: 5 }],
    chosenText: `<bash>cmd: echo ${index}</bash>`,
    actions: [{ kind: 'bash', input: { cmd: `echo ${index}` }, observation: `<bash_output>${index}</bash_output>`, ok: true, exitCode: 0, durationMs: 3 }],
    parseErrors: [],
    usage: { promptTokens: 100, completionTokens: 5 },
    todos: [],
    scratchpad: [],
    ...extra,
  };
}

function footer(steps: number): TrajectoryFooter {
  return {
    type: 'footer',
    endedAt: '2026-01-01T00:00:09.000Z',
    endReason: 'finished',
    steps,
    reward: { tests: 1, weights: { tests: 1, judge: 0 }, total: 1 },
    usage: { promptTokens: 200, completionTokens: 10, verifierCalls: 0, verifierOutputTokens: 0 },
    depgpo: { resources: { files: [], ports: [], processes: [] }, stepScores: [1, 0], factors: [2, 0], edges: [], advantages: [1.5, 0] },
  };
}

function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), 'tbrl-traj-'));
}

test('writer and reader round-trip header, steps and footer', async () => {
  const dir = scratchDir();
  try {
    const path = join(dir, 'sub', 'trajectory.jsonl');
    const w = TrajectoryWriter.create(path, header());
    w.appendStep(step(0));
    w.appendStep(step(1));
    w.writeFooter(footer(2));
    assert.equal(w.closed, true);
    const t = await readTrajectory(path);
    assert.equal(t.header.runId, 'run-1');
    assert.deepEqual(t.steps.map((s) => s.index), [0, 1]);
    assert.equal(t.footer?.reward?.total, 1);
    assert.equal(t.truncated, false);
    assert.deepEqual(t.warnings, []);
    assert.equal(readFileSync(path, 'utf8').split('\n').length, 5); // 4 lines + trailing newline
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writer refuses to overwrite an existing trajectory and to write after the footer', () => {
  const dir = scratchDir();
  try {
    const path = join(dir, 'trajectory.jsonl');
    const w = TrajectoryWriter.create(path, header());
    assert.throws(() => TrajectoryWriter.create(path, header()), (e: unknown) => e instanceof TbrlError && e.code === 'trajectory-exists');
    w.writeFooter(footer(0));
    assert.throws(() => w.appendStep(step(0)), (e: unknown) => e instanceof TbrlError && e.code === 'trajectory-closed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('reader accepts a truncated last line and reports it with the missing footer', async () => {
  const dir = scratchDir();
  try {
    const path = join(dir, 'trajectory.jsonl');
    const w = TrajectoryWriter.create(path, header());
    w.appendStep(step(0));
    w.close();
    // Half of a step line, as a kill during write() leaves it.
    appendFileSync(path, JSON.stringify(step(1)).slice(0, 40));
    const t = await readTrajectory(path);
    assert.equal(t.truncated, true);
    assert.equal(t.steps.length, 1);
    assert.equal(t.footer, undefined);
    assert.ok(t.warnings.some((m) => /line 3 is incomplete/.test(m)), t.warnings.join('\n'));
    assert.ok(t.warnings.some((m) => /no footer — the run was interrupted/.test(m)), t.warnings.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('reader rejects a corrupt line in the middle, naming the line', () => {
  const text = [JSON.stringify(header()), '{"type":"step", broken', JSON.stringify(step(1)), ''].join('\n');
  assert.throws(() => parseTrajectory(text, 't.jsonl'), (e: unknown) => e instanceof TbrlError && /t\.jsonl: line 2 is not valid JSON/.test(e.message));
});

test('reader rejects an unknown major version naming both versions, accepts a newer minor', () => {
  const h2 = { ...header(), schema: 'tbrl.trajectory/2.3' };
  assert.throws(
    () => parseTrajectory(JSON.stringify(h2) + '\n', 'future.jsonl'),
    (e: unknown) => e instanceof TbrlError && e.code === 'trajectory-version' && /2\.3/.test(e.message) && /major version 1/.test(e.message) && /Upgrade tbrl/.test(e.message),
  );
  const h1 = { ...header(), schema: 'tbrl.trajectory/1.7' };
  const t = parseTrajectory(JSON.stringify(h1) + '\n' + JSON.stringify(footer(0)) + '\n', 'minor.jsonl');
  assert.equal(t.header.schema, 'tbrl.trajectory/1.7');
  assert.throws(() => parseTrajectory('{"type":"step"}\n', 'nohead.jsonl'), (e: unknown) => e instanceof TbrlError && e.code === 'trajectory-no-header');
  assert.throws(() => parseTrajectory('', 'empty.jsonl'), (e: unknown) => e instanceof TbrlError && /empty/.test(e.message));
});

test("fsync'd lines survive a SIGKILL of the writing process", async () => {
  const dir = scratchDir();
  try {
    const path = join(dir, 'trajectory.jsonl');
    const fixture = join(dir, 'fixture.json');
    writeFileSync(fixture, JSON.stringify({ header: header(), steps: [step(0), step(1)] }));
    // The child writes two steps and kills itself with SIGKILL before any footer or close: no exit handlers run.
    const script = `
      const { TrajectoryWriter } = require(${JSON.stringify(join(process.cwd(), 'src/core/trajectory/writer.ts'))});
      const f = JSON.parse(require('fs').readFileSync(${JSON.stringify(fixture)}, 'utf8'));
      const w = TrajectoryWriter.create(${JSON.stringify(path)}, f.header);
      for (const s of f.steps) w.appendStep(s);
      process.kill(process.pid, 'SIGKILL');
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    assert.equal(r.signal, 'SIGKILL', r.stderr);
    const t = await readTrajectory(path);
    assert.deepEqual(t.steps.map((s) => s.index), [0, 1]);
    assert.equal(t.footer, undefined);
    assert.equal(t.truncated, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('rLLM episode export carries prompt, steps, sparse reward and advantages', () => {
  const text = [header(), step(0), step(1, { parseErrors: ['bad yaml'] }), footer(2)].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const e = toEpisode(parseTrajectory(text, 't'));
  assert.deepEqual(e.prompt.map((m) => m.role), ['system', 'user']);
  assert.equal(e.trajectories[0].steps.length, 2);
  const [s0, s1] = e.trajectories[0].steps;
  assert.equal(s0.observation, 'Write hello to /app/hello.txt');
  assert.equal(s1.observation, '<bash_output>0</bash_output>');
  assert.equal(s1.chat_completions.length, 4); // system, instruction, turn 0, observation 0
  assert.deepEqual([s0.reward, s1.reward], [0, 1]);
  assert.deepEqual([s0.done, s1.done], [false, true]);
  assert.deepEqual([s0.advantage, s1.advantage], [1.5, 0]);
  assert.equal(e.is_correct, true);
  assert.equal(e.termination_reason, 'finished');
  assert.match(e.messages[e.messages.length - 1].content, /<error>\nbad yaml\n<\/error>/);
});

test('ATIF export maps actions to tool calls and parse errors to unsourced results', () => {
  const text = [header(), step(0, { parseErrors: ['bad yaml'] }), footer(1)].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const a = toAtif(parseTrajectory(text, 't'));
  assert.equal(a.schema_version, 'ATIF-v1.7');
  assert.deepEqual(a.steps.map((s) => s.source), ['system', 'user', 'agent']);
  assert.deepEqual(a.steps.map((s) => s.step_id), [1, 2, 3]);
  const agent = a.steps[2];
  assert.equal(agent.tool_calls?.[0].function_name, 'bash');
  assert.deepEqual(agent.tool_calls?.[0].arguments, { cmd: 'echo 0' });
  assert.equal(agent.observation?.results[0].source_call_id, agent.tool_calls?.[0].tool_call_id);
  assert.equal(agent.observation?.results[1].source_call_id, undefined);
  assert.equal(agent.observation?.results[1].content, 'bad yaml');
  assert.equal(a.final_metrics?.total_prompt_tokens, 200);
});
