import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseMetrics, MetricsParser } from '../../src/core/trainer/metrics';
import { CHARTS, chartViews } from '../../webview/trainer-dashboard/series';
import { parseOverrides, selectionOf, taskItems, trajectoryItems } from '../../src/extension/trainer/selection';
import type { RunEntry, TaskEntry } from '../../src/extension/discover';
import { isActiveJob, jobDescription, newestFirst } from '../../src/extension/trainer/jobs-view';

test('chart view-model: verl console lines and bridge JSONL become one chart per canonical series, in step order', () => {
  const log = [
    'tbrl-metrics {"step": 0, "reward/mean": 0.25, "reward/pass_rate": 0.0, "depgpo/factor_spread": 0.4}',
    'INFO step:1 - actor/entropy:0.91 - actor/grad_norm:3.5 - critic/score/mean:0.5',
    'tbrl-metrics {"step": 1, "reward/mean": 0.5, "reward/pass_rate": 0.5, "depgpo/factor_spread": 0.7}',
    'step:2 - actor/entropy:0.8 - actor/grad_norm:nan',
    'tbrl-metrics {"step": 2, "reward/mean": 0.75, "reward/pass_rate": 1, "depgpo/factor_spread": 0.7}',
    '',
  ].join('\n');
  const views = chartViews(parseMetrics(log).canonical());
  assert.deepEqual(views.map((v) => v.id), CHARTS.map((c) => c.id));
  const by = Object.fromEntries(views.map((v) => [v.id, v]));
  // reward/mean is the first-listed key, so the verl critic/score/mean line does not replace it.
  assert.deepEqual(by.rewardMean.points, [{ step: 0, value: 0.25 }, { step: 1, value: 0.5 }, { step: 2, value: 0.75 }]);
  assert.deepEqual(by.rewardMean.yDomain, [0.25, 0.75]);
  assert.deepEqual(by.rewardMean.xDomain, [0, 2]);
  assert.deepEqual(by.rewardMean.last, { step: 2, value: 0.75 });
  assert.deepEqual(by.passRate.points.map((p) => p.value), [0, 0.5, 1]);
  assert.deepEqual(by.entropy.points, [{ step: 1, value: 0.91 }, { step: 2, value: 0.8 }]);
  // A diverged step (nan) is not drawn but counted, so the chart can say so.
  assert.deepEqual(by.gradNorm.points, [{ step: 1, value: 3.5 }]);
  assert.equal(by.gradNorm.dropped, 1);
  assert.deepEqual(by.gradNorm.xDomain, [1, 2], 'a single point still gets a non-empty x range');
  assert.deepEqual(by.gradNorm.yDomain, [3, 4], 'a flat series gets a unit band');
  assert.deepEqual(by.depgpoFactorSpread.points.map((p) => p.value), [0.4, 0.7, 0.7]);
});

test('chart view-model: no data gives empty charts with finite domains; out-of-order steps are sorted and deduplicated', () => {
  const empty = chartViews(new MetricsParser().canonical());
  for (const v of empty) {
    assert.equal(v.points.length, 0);
    assert.equal(v.last, undefined);
    assert.ok(v.yDomain.every(Number.isFinite) && v.yDomain[0] < v.yDomain[1]);
  }
  const [reward] = chartViews({ rewardMean: [{ step: 3, value: 1 }, { step: 1, value: 0 }, { step: 3, value: 2 }, { step: 2, value: Infinity }] });
  assert.deepEqual(reward.points, [{ step: 1, value: 0 }, { step: 3, value: 2 }]);
  assert.equal(reward.dropped, 1);
});

const run = (o: Partial<RunEntry> & { trajectory: string; taskId: string }): RunEntry => ({ runId: o.trajectory, startedAt: '2026-01-01T00:00:00Z', policy: 'oracle', ...o });

test('quick-pick selection: the Runs view filter pre-picks trajectories, tasks follow the picked runs, overrides split', async () => {
  const runs: RunEntry[] = [
    run({ trajectory: '/r/a/trajectory.jsonl', taskId: 'hello-world', steps: 3, reward: 1, pass: true }),
    run({ trajectory: '/r/b/trajectory.jsonl', taskId: 'csv-fix', steps: 5, reward: 0.2, pass: false }),
    run({ trajectory: '/r/c/trajectory.jsonl', taskId: 'csv-fix' }),
  ];
  const picked = (items: Array<{ picked: boolean; value: string }>): string[] => items.filter((i) => i.picked).map((i) => i.value);
  assert.deepEqual(picked(await trajectoryItems(runs, 'pass')), ['/r/a/trajectory.jsonl']);
  assert.deepEqual(picked(await trajectoryItems(runs, 'reward<0.5')), ['/r/b/trajectory.jsonl']);
  assert.deepEqual(picked(await trajectoryItems(runs, 'csv')), ['/r/b/trajectory.jsonl', '/r/c/trajectory.jsonl']);
  // No filter: every finished run, never an unfinished one (a bundle of a killed run has no reward).
  assert.deepEqual(picked(await trajectoryItems(runs, '  ')), ['/r/a/trajectory.jsonl', '/r/b/trajectory.jsonl']);
  const items = await trajectoryItems(runs, 'pass');
  assert.equal(items.length, 3, 'unmatched runs stay listed, only unpicked');
  assert.match(items[2].description, /unfinished/);

  const tasks: TaskEntry[] = [
    { dir: '/w/examples/hello-world', format: 'terminal-bench', name: 'examples/hello-world' },
    { dir: '/w/tasks/csv-fix/', format: 'harbor', name: 'tasks/csv-fix' },
  ];
  assert.deepEqual(picked(taskItems(tasks, runs, ['/r/a/trajectory.jsonl'])), ['/w/examples/hello-world']);
  assert.deepEqual(picked(taskItems(tasks, runs, ['/r/b/trajectory.jsonl'])), ['/w/tasks/csv-fix/']);
  assert.deepEqual(picked(taskItems(tasks, runs, [])), []);

  const sel = selectionOf(items.filter((i) => i.picked), 'trajectories', { taskDirs: ['/t'], trajectories: [] });
  assert.deepEqual(sel, { taskDirs: ['/t'], trajectories: ['/r/a/trajectory.jsonl'] });
  assert.deepEqual(parseOverrides(' a.b=1, c=x  d=2\n'), ['a.b=1', 'c=x', 'd=2']);
  assert.deepEqual(parseOverrides('   '), []);
});

test('quick-pick selection: text: filters read the trajectories on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-sel-'));
  try {
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    writeFileSync(join(dir, 'a/trajectory.jsonl'), '{"type":"header"}\n{"type":"step","action":"pytest -q"}\n');
    writeFileSync(join(dir, 'b/trajectory.jsonl'), '{"type":"header"}\n{"type":"step","action":"ls"}\n');
    const runs = [run({ trajectory: join(dir, 'a/trajectory.jsonl'), taskId: 't', steps: 1 }), run({ trajectory: join(dir, 'b/trajectory.jsonl'), taskId: 't', steps: 1 })];
    const items = await trajectoryItems(runs, 'text:PYTEST');
    assert.deepEqual(items.filter((i) => i.picked).map((i) => i.value), [join(dir, 'a/trajectory.jsonl')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Trainer view rows: newest job first, active means pending or running, description is status and UTC start', () => {
  const jobs = [
    { submission_id: 'old', status: 'SUCCEEDED' as const, start_time: Date.UTC(2026, 0, 1, 8, 30) },
    { submission_id: 'none', status: 'PENDING' as const },
    { submission_id: 'new', status: 'RUNNING' as const, start_time: Date.UTC(2026, 0, 2, 9, 5, 59) },
  ];
  assert.deepEqual(newestFirst(jobs).map((j) => j.submission_id), ['new', 'old', 'none']);
  assert.deepEqual(jobs.map((j) => j.submission_id), ['old', 'none', 'new'], 'the caller\'s list is left as it was');
  assert.deepEqual((['PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'] as const).map((status) => isActiveJob({ status })), [true, true, false, false, false]);
  assert.equal(jobDescription(jobs[2]), 'RUNNING · 2026-01-02 09:05');
  assert.equal(jobDescription(jobs[1]), 'PENDING');
});
