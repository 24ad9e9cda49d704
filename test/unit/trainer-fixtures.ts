// Fixtures shared by the trainer tests (not a test file itself): a tiny Harbor task that runs on the
// offline stand-in image, and trajectories built from a shared DepGPO vector so their credit is known.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DepgpoInput } from '../../src/core/depgpo/types';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';

export const REPO = join(__dirname, '..', '..');

export function makeTask(root: string, id = 'trainer-tiny'): string {
  const dir = join(root, id);
  mkdirSync(join(dir, 'tests'), { recursive: true });
  writeFileSync(join(dir, 'task.toml'), [
    'schema_version = "1.1"', '', '[task]', `name = "fixtures/${id}"`, '', '[verifier]', 'timeout_sec = 60.0', '', '[agent]', 'timeout_sec = 60.0', '',
    '[environment]', 'docker_image = "tbrl-standin/python:3"', '',
  ].join('\n'));
  writeFileSync(join(dir, 'instruction.md'), 'Write the line tbrl-dryrun-probe into /tmp/tbrl-dryrun-probe.\n');
  writeFileSync(join(dir, 'tests', 'test.sh'), [
    '#!/bin/bash', 'mkdir -p /logs/verifier',
    'if grep -qx tbrl-dryrun-probe /tmp/tbrl-dryrun-probe 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi', '',
  ].join('\n'), { mode: 0o755 });
  return dir;
}

interface Vector {
  input: DepgpoInput;
  group: { rewards: number[]; index: number; normalizeStd: boolean };
  expected: { stepScores: number[]; factors: number[]; z: number; groupAdvantages: number[]; stepAdvantages: number[] };
}

export function loadVector(name: string): Vector {
  return JSON.parse(readFileSync(join(REPO, 'test', 'vectors', 'depgpo', `${name}.json`), 'utf8')) as Vector;
}

/** trajectory.jsonl text whose commands, traces, tokens and verifier trace are the vector's input. */
export function trajectoryFromVector(v: Vector, reward: number, runId: string, taskId = 'vector-task'): string {
  const T = v.input.stepTokens.length;
  const header: TrajectoryHeader = {
    type: 'header', schema: 'tbrl.trajectory/1.0', runId, startedAt: '2026-01-01T00:00:00.000Z',
    task: { id: taskId, dir: `/tasks/${taskId}`, format: 'terminal-bench', instruction: v.input.instruction },
    policy: { kind: 'model', model: 'fixture' }, config: {}, versions: { tbrl: '0.1.0', node: 'v20' },
    sandbox: { image: 'fixture', tracing: { available: true, method: 'strace' } },
  };
  const steps: StepRecord[] = [];
  for (let t = 0; t < T; t++) {
    const cmds = v.input.commands.filter((c) => c.step === t);
    const text = cmds.length ? cmds.map((c) => `<bash>\ncmd: ${JSON.stringify(c.text)}\n</bash>`).join('\n') : '<todo>\noperations:\n  - action: view_all\n</todo>';
    steps.push({
      type: 'step', index: t, startedAt: '2026-01-01T00:00:00.000Z', durationMs: 1,
      candidates: [{ text, completionTokens: v.input.stepTokens[t], parses: true }],
      chosenText: text,
      actions: cmds.length
        ? cmds.map((c) => ({ kind: 'bash', input: { cmd: c.text }, observation: '', ok: true, exitCode: 0, durationMs: 1, ...(c.trace ? { trace: c.trace } : {}) }))
        : [{ kind: 'todo', input: { operations: [{ action: 'view_all' }] }, observation: '', ok: true, durationMs: 1 }],
      parseErrors: [], usage: { promptTokens: 10, completionTokens: v.input.stepTokens[t] }, todos: [], scratchpad: [],
    });
  }
  const footer: TrajectoryFooter = {
    type: 'footer', endedAt: '2026-01-01T00:01:00.000Z', endReason: 'finished', steps: T,
    reward: { tests: reward, weights: { tests: 1, judge: 0 }, total: reward },
    ...(v.input.verifier ? { verifierTrace: v.input.verifier } : {}),
    usage: { promptTokens: 10 * T, completionTokens: v.input.stepTokens.reduce((a, b) => a + b, 0), verifierCalls: 0, verifierOutputTokens: 0 },
  };
  return [header, ...steps, footer].map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** One group of rollouts (the vector's rewards) written as run directories; returns their paths. */
export function writeGroup(root: string, v: Vector, prefix = 'run'): string[] {
  return v.group.rewards.map((r, i) => {
    const dir = join(root, `${prefix}-${i}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'trajectory.jsonl'), trajectoryFromVector(v, r, `${prefix}-${i}`));
    return dir;
  });
}

export function scratch(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Every entry of a zip file as text, read by Python's zipfile: the reader Ray itself uses to unpack working_dir packages. */
export function readZipWithPython(file: string): Record<string, string> {
  const out = execFileSync('python3', ['-c', 'import sys, zipfile, json\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\nprint(json.dumps({n: z.read(n).decode("utf-8", "replace") for n in z.namelist()}))', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return JSON.parse(out) as Record<string, string>;
}
