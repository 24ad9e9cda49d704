import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { depgpoOfTrajectory, trajectoryCommands } from '../../src/core/depgpo/trajectory';
import { buildGraphView, formatGraphText, toDot } from '../../src/core/depgpo/view';
import { agentVisibleResources, isRuntimeFile } from '../../src/core/depgpo/visible';
import { renderReport } from '../../src/core/run/report';
import { runScope } from '../../src/extension/debug/variables';
import { EMPTY_TRACE } from '../../src/core/trace/types';

// A recorded oracle run whose verifier read /etc/passwd, /etc/nsswitch.conf, two anonymous /tmp/#NNN files and PID 1.
const FIXTURE = resolve('test/e2e/fixtures/hello-world-oracle/trajectory.jsonl');
const RUNTIME = ['/etc/nsswitch.conf', '/etc/passwd', '/tmp/#1982934', '/tmp/#1982950'];
const AGENT = ['/app/data/input.txt', '/app/out/counts.json', '/app/out/summary.txt'];

test('E keeps the runtime reads; graph, report and Variables view show only what an agent command could affect, the rest counted', async () => {
  const t = await readTrajectory(FIXTURE);
  assert.deepEqual(t.footer?.depgpo?.resources.files, [...RUNTIME, ...AGENT], 'the trajectory keeps all of E');
  const e = agentVisibleResources(t.footer!.depgpo!.resources, trajectoryCommands(t.steps));
  assert.deepEqual(e.files, AGENT);
  assert.deepEqual(e.runtime, { files: RUNTIME, processes: ['1:?'] });

  const { input, result } = depgpoOfTrajectory(t);
  const view = buildGraphView(input, result);
  assert.deepEqual(view.sinks.map((s) => s.name), AGENT);
  assert.deepEqual(view.runtimeResources, { files: RUNTIME, processes: ['1:?'] });
  const text = formatGraphText(view);
  assert.match(text.split('\n')[0], /^E: files \/app\/data\/input\.txt, \/app\/out\/counts\.json, \/app\/out\/summary\.txt; ports \(none\); processes \(none\); \+4 runtime files, \+1 runtime process/);
  assert.doesNotMatch(toDot(view), /passwd|nsswitch|#1982934|1:\?/);

  const report = renderReport({ header: t.header, steps: t.steps, footer: t.footer!, policyDescription: 'oracle', trajectoryPath: FIXTURE });
  assert.match(report, /Resource set E: 3 file\(s\) \(\/app\/data\/input\.txt, \/app\/out\/counts\.json, \/app\/out\/summary\.txt\), 0 port\(s\), 0 process\(es\) \(\+4 runtime files, \+1 runtime process\)/);
  assert.doesNotMatch(report, /passwd/);

  const vars = runScope(t.footer, 0, t.steps).find((v) => v.name === 'depgpo.E')!;
  assert.equal(vars.value, '3 files, 0 ports, 0 processes (+4 runtime files, +1 runtime process)');
  assert.deepEqual(vars.children!().map((c) => c.name), ['files', 'ports', 'processes', 'runtime']);
});

test('a runtime path an agent command wrote, and a process it started, are shown', () => {
  assert.ok(isRuntimeFile('/usr/lib/python3.11/os.py') && isRuntimeFile('/app/__pycache__/m.cpython-311.pyc') && !isRuntimeFile('/app/etc/config'));
  const resources = { files: ['/etc/hosts', '/etc/passwd', '/app/x'], ports: [8080], processes: ['1:?', '57:nginx'] };
  const commands = [{ trace: { ...EMPTY_TRACE, writes: [{ path: '/etc/hosts', hunks: [], linesAfter: 1 }], processes: ['57:nginx'] } }];
  const e = agentVisibleResources(resources, commands as never);
  assert.deepEqual([e.files, e.ports, e.processes], [['/etc/hosts', '/app/x'], [8080], ['57:nginx']]);
  assert.deepEqual(e.runtime, { files: ['/etc/passwd'], processes: ['1:?'] });
});
