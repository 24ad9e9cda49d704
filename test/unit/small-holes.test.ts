import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelClient } from '../../src/core/model/client';
import { parseTestWeights } from '../../src/core/tasks/weights';
import { TrajectoryWriter } from '../../src/core/trajectory/writer';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import { resolvePath } from '../../src/core/actions/handlers/common';
import { TbrlError } from '../../src/core/errors';
import { TRAJECTORY_SCHEMA, type StepRecord, type TrajectoryHeader } from '../../src/core/trajectory/schema';
import type { ActionContext } from '../../src/core/actions/types';

test('weights that each are finite but overflow to Infinity when summed are refused naming the file', () => {
  assert.throws(() => parseTestWeights('/t/test_weights.json', '{"a": 1e308, "b": 1e308}'), (err: unknown) => {
    assert.ok(err instanceof TbrlError && err.code === 'TASK_FIELD_INVALID');
    assert.match(err.message, /test_weights\.json: the weights sum to Infinity/);
    return true;
  });
});

test('a model server that drops the connection mid-body is retried as a connection fault', async () => {
  let requests = 0;
  const server = createServer((socket) => {
    socket.once('data', () => {
      requests++;
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"id":"x","choices":[{"mess');
      setTimeout(() => socket.destroy(), 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const client = new ModelClient({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', apiKey: 'k', maxRetries: 2 }, { retryBaseMs: 5, retryMaxMs: 10 });
    await assert.rejects(client.sample([{ role: 'user', content: 'hi' }], 1), (err: unknown) => {
      assert.ok(err instanceof TbrlError, String(err));
      assert.equal(err.code, 'model-unreachable', err.message);
      assert.match(err.message, /dropped while the answer was read/);
      return true;
    });
    assert.equal(requests, 3, 'a dropped body was not retried');
  } finally {
    server.close();
  }
});

test('a full disk while writing the trajectory is DISK_FULL naming the file; the lines before it are kept', () => {
  const path = join(mkdtempSync(join(tmpdir(), 'tbrl-full-')), 'trajectory.jsonl');
  const header = { type: 'header', schema: TRAJECTORY_SCHEMA, runId: 'r', startedAt: '', task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do' }, policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0', node: 'v' } } as TrajectoryHeader;
  const step = { type: 'step', index: 0, startedAt: '', durationMs: 1, candidates: [], chosenText: 'x', actions: [], parseErrors: [], usage: { promptTokens: 0, completionTokens: 0 }, todos: [], scratchpad: [] } as StepRecord;
  const writer = TrajectoryWriter.create(path, header);
  writer.appendStep(step);
  // /dev/full answers every write with ENOSPC, as a full disk does.
  (writer as unknown as { fd: number }).fd = openSync('/dev/full', 'w');
  assert.throws(() => writer.appendStep({ ...step, index: 1 }), (err: unknown) => {
    assert.ok(err instanceof TbrlError && err.code === 'DISK_FULL', String(err));
    assert.match(err.message, /trajectory\.jsonl: the disk is full \(ENOSPC\)/);
    return true;
  });
  const kept = parseTrajectory(readFileSync(path, 'utf8'), path);
  assert.equal(kept.steps.length, 1);
});

test('a NUL byte in a file-tool path is refused, not reported as created', async () => {
  const ctx = { sandbox: {} } as unknown as ActionContext;
  await assert.rejects(resolvePath(ctx, '/app/x\0.py'), /NUL byte/);
});
