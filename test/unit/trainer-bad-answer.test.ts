// Found by the chaos suite (test/chaos/ray.test.ts): a Jobs API answer of 200 with a body that is
// not a JSON object (a proxy's HTML page, `null`, a cut answer) escaped as a raw SyntaxError or
// TypeError from find/status/list/logs/stop/delete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RayJobsClient } from '../../src/core/trainer/jobs';
import { TbrlError } from '../../src/core/errors';

test('a 200 whose body is not a JSON object is a ray-bad-answer error naming the call and the fix', async () => {
  let body = '';
  const server = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(body); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new RayJobsClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  try {
    for (const [b, call, what] of [
      ['<html>502 Bad Gateway</html>', () => client.find('j1'), 'GET /api/jobs/j1'],
      ['null', () => client.logs('j1'), 'GET /api/jobs/j1/logs'],
      ['{"submission_id": "j', () => client.status('j1'), 'GET /api/jobs/j1'],
      ['7', () => client.stop('j1'), 'POST /api/jobs/j1/stop'],
    ] as const) {
      body = b;
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof TbrlError, String(err));
        assert.equal(err.code, 'ray-bad-answer');
        assert.ok(err.message.includes(`${what} on http://127.0.0.1:`), err.message);
        assert.match(err.message, /not a JSON object/);
        assert.match(err.fix ?? '', /Ray dashboard/);
        return true;
      });
    }
    // `null` from /api/version is "not Ray", not a TypeError.
    body = 'null';
    await assert.rejects(client.version(), (err: unknown) => err instanceof TbrlError && err.code === 'ray-not-ray');
    body = '{"deleted": true}';
    assert.equal(await client.delete('j1'), true);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
