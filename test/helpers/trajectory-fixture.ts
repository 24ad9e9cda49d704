import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../../src/core/trajectory/schema';

/**
 * A synthetic trajectory with a known shape, for the debugger and trace-graph tests and benchmarks:
 * step i is `bash` unless i % 3 === 1 (file.edit); step 3 runs pytest and fails (exit 2); step 5 has a verifier
 * margin of 0.05 (others 0.5); Φ rises each step except a drop at step 6.
 */
export function syntheticSteps(n: number): StepRecord[] {
  const steps: StepRecord[] = [];
  for (let i = 0; i < n; i++) {
    const edit = i % 3 === 1;
    const cmd = i === 3 ? 'python3 -m pytest -x tests/' : `echo step ${i} > /app/s${i}.txt`;
    const text = edit ? `<file>\naction: edit\nfile_path: /app/main.py\nold: a${i}\nnew: b${i}\n</file>` : `<bash>\ncmd: ${cmd}\n</bash>`;
    steps.push({
      type: 'step',
      index: i,
      startedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      durationMs: 100 + i,
      candidates: [{ text, parses: true, completionTokens: 20 }, { text: '<bash>\ncmd: ls\n</bash>', parses: true, completionTokens: 8 }],
      decision: { mode: 'listwise', chosen: 0, scores: [0.9, i === 5 ? 0.85 : 0.4], margin: i === 5 ? 0.05 : 0.5, calls: 1, outputTokens: 12, parallelOutputTokens: 12 },
      chosenText: text,
      actions: [
        edit
          ? { kind: 'file.edit', input: { file_path: '/app/main.py', old: `a${i}`, new: `b${i}` }, observation: `edited /app/main.py (step ${i})`, ok: true, durationMs: 5,
            trace: { reads: ['/app/main.py'], writes: [{ path: '/app/main.py', hunks: [], linesAfter: 10 }], stdoutValues: [], ports: [], processes: [] } }
          : { kind: 'bash', input: { cmd }, observation: i === 3 ? 'E   assert 1 == 2\n1 failed' : `ok ${i}`, ok: i !== 3, exitCode: i === 3 ? 2 : 0, durationMs: 40,
            trace: { reads: [], writes: [{ path: `/app/s${i}.txt`, hunks: [], linesAfter: 1, created: true }], stdoutValues: [], ports: [], processes: [] } },
      ],
      parseErrors: [],
      usage: { promptTokens: 1000 + i, completionTokens: 30 },
      todos: [{ id: 1, content: 'write the script', done: i > 2 }, { id: 2, content: 'run the tests', done: false }],
      scratchpad: i > 1 ? ['the input has 3 lines'] : [],
      phi: i === 6 ? 0.1 : Math.min(1, i / 10),
    });
  }
  return steps;
}

export function syntheticTrajectory(n: number): string {
  const header: TrajectoryHeader = {
    type: 'header', schema: 'tbrl.trajectory/1.0', runId: `synthetic-${n}`, startedAt: '2026-01-01T00:00:00.000Z',
    task: { id: 'synthetic', dir: '/tmp/synthetic', format: 'terminal-bench', instruction: 'Do the thing.' },
    policy: { kind: 'model', model: 'test', n: 2 }, verifier: { mode: 'listwise', n: 2 }, config: {}, versions: { tbrl: '0.1.0', node: process.version },
  };
  const steps = syntheticSteps(n);
  const footer: TrajectoryFooter = {
    type: 'footer', endedAt: '2026-01-01T01:00:00.000Z', endReason: 'finished', steps: n,
    reward: { tests: 0.75, testOutcomes: [{ name: 'test_a', status: 'passed', weight: 3 }, { name: 'test_b', status: 'failed', weight: 1 }], weights: { tests: 1, judge: 0 }, total: 0.75 },
    depgpo: { resources: { files: ['/app/s0.txt'], ports: [], processes: [] }, stepScores: steps.map((_s, i) => (i % 2 ? 1 : 0)), factors: steps.map((_s, i) => (i % 2 ? 1.5 : 0.5)), edges: [] },
    usage: { promptTokens: 0, completionTokens: 0, verifierCalls: n, verifierOutputTokens: 12 * n },
  };
  return [header, ...steps, footer].map((r) => JSON.stringify(r)).join('\n') + '\n';
}
