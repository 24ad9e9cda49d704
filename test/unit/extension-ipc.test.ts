import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Endpoint, isWireMessage, notification, request, type WireMessage } from '../../webview/shared/ipc';

const Add = request<{ a: number; b: number }, number>('test/add');
const Fail = request<void, never>('test/fail');
const Ping = notification<{ n: number }>('test/ping');

/** Two endpoints wired to each other through structured clone, as postMessage does. */
function pair(timeoutMs = 1000): [Endpoint, Endpoint, WireMessage[]] {
  const log: WireMessage[] = [];
  const ends: Endpoint[] = [];
  const a = new Endpoint((m) => { log.push(m); queueMicrotask(() => void ends[1].receive(structuredClone(m))); }, timeoutMs);
  const b = new Endpoint((m) => { log.push(m); queueMicrotask(() => void ends[0].receive(structuredClone(m))); }, timeoutMs);
  ends.push(a, b);
  return [a, b, log];
}

test('a request gets the handler result; replies are matched by id even when answered out of order', async () => {
  const [host, view] = pair();
  host.onRequest(Add, async ({ a, b }) => {
    await new Promise((r) => setTimeout(r, a));
    return a + b;
  });
  const [slow, fast] = await Promise.all([view.sendRequest(Add, { a: 30, b: 1 }), view.sendRequest(Add, { a: 1, b: 1 })]);
  assert.equal(slow, 31);
  assert.equal(fast, 2);
});

test('a throwing handler rejects the caller with its message; an unknown method says so', async () => {
  const [host, view] = pair();
  host.onRequest(Fail, () => {
    throw new Error('graph not found: runs/x/trajectory.jsonl');
  });
  await assert.rejects(view.sendRequest(Fail, undefined), /graph not found: runs\/x\/trajectory\.jsonl/);
  await assert.rejects(view.sendRequest(Add, { a: 1, b: 2 }), /No handler for test\/add/);
});

test('notifications reach every subscriber until it unsubscribes; foreign messages are ignored', async () => {
  const [host, view] = pair();
  const got: number[] = [];
  const off = view.onNotification(Ping, ({ n }) => got.push(n));
  host.sendNotification(Ping, { n: 1 });
  await new Promise((r) => setTimeout(r, 5));
  off();
  host.sendNotification(Ping, { n: 2 });
  await view.receive({ type: 'notification', method: 'test/ping', params: { n: 3 } });
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(got, [1]);
  assert.equal(isWireMessage({ command: 'alert' }), false);
});

test('an unanswered request times out with a reason, and dispose rejects what is pending', async () => {
  const silent = new Endpoint(() => {}, 20);
  await assert.rejects(silent.sendRequest(Add, { a: 1, b: 1 }), /No reply to test\/add within 20 ms/);
  const closing = new Endpoint(() => {}, 0);
  const p = closing.sendRequest(Add, { a: 1, b: 1 });
  closing.dispose();
  await assert.rejects(p, /connection was closed/);
});

test('a request given its own timeout outlives the endpoint default (0 waits for a handler that waits for the user)', async () => {
  const [host, view] = pair(20);
  host.onRequest(Add, async ({ a, b }) => {
    await new Promise((r) => setTimeout(r, 60));
    return a + b;
  });
  await assert.rejects(view.sendRequest(Add, { a: 1, b: 1 }), /within 20 ms/);
  assert.equal(await view.sendRequest(Add, { a: 2, b: 3 }, 0), 5);
  assert.equal(await view.sendRequest(Add, { a: 2, b: 4 }, 500), 6);
});
