import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIServer } from '../helpers/openai-server';
import { MidHarnessVerifier } from '../../src/core/verifier/verifier';
import type { ChatMessage } from '../../src/core/model/types';

const history: ChatMessage[] = [{ role: 'system', content: 'agent' }, { role: 'user', content: 'Write hello to /app/x.txt' }];
const bash = (cmd: string) => `<bash>\ncmd: ${cmd}\n</bash>`;
// An answer in the style of a 135M model as verifier: prose without the line the mode needs.
const SMALL_MODEL_RAMBLE = 'The best candidate is the one that writes the file because it is correct and efficient.';

test('an unusable verifier answer is asked again once; a usable second answer decides', async () => {
  const srv = await startOpenAIServer();
  try {
    srv.enqueue(SMALL_MODEL_RAMBLE, 'RANKING: B > A');
    const v = new MidHarnessVerifier({ mode: 'listwise', endpoint: { model: 'm', baseUrl: srv.baseUrl, maxRetries: 0 } });
    const d = await v.select({ messages: history, candidates: [bash('echo no'), bash('echo hello > /app/x.txt')] });
    assert.equal(d.chosen, 1);
    assert.equal(d.retries, 1);
    assert.equal(d.calls, 2);
    assert.equal(d.fallback, undefined);
    assert.equal(srv.requests.length, 2);
  } finally {
    await srv.close();
  }
});

test('two unusable answers: the stated fallback (first parseable candidate) with the mode and the reason, no third call', async () => {
  const srv = await startOpenAIServer();
  try {
    for (const mode of ['listwise', 'decision-only'] as const) {
      srv.enqueue(SMALL_MODEL_RAMBLE, 'I think so too.');
      const v = new MidHarnessVerifier({ mode, endpoint: { model: 'm', baseUrl: srv.baseUrl, maxRetries: 0 } });
      const d = await v.select({ messages: history, candidates: ['not an action', bash('ls'), bash('pwd')] });
      assert.equal(d.mode, mode);
      assert.equal(d.chosen, 1, 'the first candidate that parses');
      assert.equal(d.retries, 1);
      assert.match(d.fallback ?? '', /(no usable RANKING line|named no candidate).*asked again once.*took candidate 1, the first parseable one/);
    }
    assert.equal(srv.requests.length, 4);
  } finally {
    await srv.close();
  }
});
