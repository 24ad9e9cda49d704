/**
 * The KV prefix reuse of `tbrl serve` with the real local model (SmolLM2-135M from the cache):
 * within one server, a conversation's next turn and the N candidates of a turn read the shared
 * prompt once; across servers, a long prompt's state comes from the on-disk prefix cache. What a
 * reused state yields must be exactly what reading the prompt yields (same seed, same tokens).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { LocalEngine, type ChatTurn } from '../../src/core/serve/engine';
import { defaultModelPath } from '../../src/core/serve/default-model';

const modelPath = defaultModelPath();
// ~650 tokens: over the 512-token bar for saving to disk, short enough for a busy machine.
const system = `You are a terminal agent. ${Array.from({ length: 60 }, (_, i) => `Rule ${i + 1}: check the output of command ${i + 1} before going on.`).join(' ')}`;
const ask = (task: string): ChatTurn[] => [{ role: 'system', content: system }, { role: 'user', content: task }];
const sampling = { n: 1, temperature: 1, maxTokens: 6, stop: [], seed: 11, topLogprobs: 0 };

// One context shape here (N=1 requests too run on the 2-sequence context); the 1-sequence context of N=1 requests has its own cache, below.
test('a second server loads the long prompt from the disk cache and samples exactly what reading it gives', { timeout: 600_000 }, async () => {
  assert.ok(existsSync(modelPath), `the local model is not in the cache (${modelPath}): run scripts/fetch-model.sh`);
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-kv-'));
  try {
    const first = await LocalEngine.load({ modelPath, threads: 1, sequences: 2, contextSize: 2048, prefixCacheDir: dir, soloContext: false });
    let read;
    let candidates;
    try {
      read = await first.generate(ask('List the files in /app.'), sampling);
      assert.ok(read.promptTokenIds.length > 600, `prompt of ${read.promptTokenIds.length} tokens`);
      assert.equal(read.promptTokensEvaluated, read.promptTokenIds.length, 'the first request reads the whole prompt');
      assert.equal(read.promptTokensFromDisk, undefined);
      // The N candidates of one turn: the prompt is cached, nothing but the last token is read per lane.
      candidates = await first.generate(ask('List the files in /app.'), { ...sampling, n: 2 });
      assert.equal(candidates.promptTokensReused, read.promptTokenIds.length - 1);
      assert.equal(candidates.promptTokensEvaluated, 2);
    } finally {
      await first.dispose();
    }
    // One directory per model file and sequence count (llama.cpp loads a state only into the same layout).
    assert.match(readdirSync(dir)[0], new RegExp(`^${basename(modelPath).replace(/\./g, '\\.')}-\\d+-\\d+-seq2$`));
    const saved = readdirSync(join(dir, readdirSync(dir)[0]));
    assert.deepEqual(saved.map((f) => f.replace(/^[0-9a-f]+/, '')).sort(), ['.bin', '.json'], `one entry: ${saved.join(', ')}`);

    const second = await LocalEngine.load({ modelPath, threads: 1, sequences: 2, contextSize: 2048, prefixCacheDir: dir, soloContext: false });
    try {
      const loaded = await second.generate(ask('List the files in /app.'), sampling);
      assert.equal(loaded.promptTokensFromDisk, read.promptTokenIds.length - 1);
      assert.equal(loaded.promptTokensEvaluated, 1, 'only the last prompt token is read');
      assert.deepEqual(loaded.choices[0].tokens.map((t) => t.id), read.choices[0].tokens.map((t) => t.id), 'same state, same seed: same tokens');
    } finally {
      await second.dispose();
    }
    // Another task after the same system prompt, on a fresh server: the state on disk goes on with
    // the first task, so it is loaded, its tail erased, and only the new task is read.
    const third = await LocalEngine.load({ modelPath, threads: 1, sequences: 2, contextSize: 2048, prefixCacheDir: dir, soloContext: false });
    try {
      const other = await third.generate(ask('Count the lines of /app/data/input.txt and print the number.'), sampling);
      const shared = other.promptTokensReused;
      assert.ok(other.promptTokensFromDisk === shared && shared > 600, JSON.stringify({ shared, fromDisk: other.promptTokensFromDisk }));
      assert.equal(other.promptTokensEvaluated, other.promptTokenIds.length - shared);
      assert.ok(other.choices[0].tokens.length >= 1);
    } finally {
      await third.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('warming the prefix cache fills one entry per context shape; a new server\'s N=1 and N=2 requests both load the prompt', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-kv-'));
  try {
    const first = await LocalEngine.load({ modelPath, threads: 1, sequences: 2, contextSize: 2048, prefixCacheDir: dir });
    let warmed;
    try {
      assert.ok(first.hasSoloContext);
      warmed = await first.warmPrefixCache(ask('List the files in /app.'));
    } finally {
      await first.dispose();
    }
    assert.deepEqual(warmed.map((w) => [w.contextSequences, w.fromDisk]), [[2, 0], [1, 0]], JSON.stringify(warmed));
    assert.ok(warmed.every((w) => w.evaluated > 600));
    // llama.cpp loads a state only into a context with the same number of sequences: one directory each.
    assert.deepEqual(readdirSync(dir).map((d) => d.replace(/^.*-(seq\d+)$/, '$1')).sort(), ['seq1', 'seq2']);

    const second = await LocalEngine.load({ modelPath, threads: 1, sequences: 2, contextSize: 2048, prefixCacheDir: dir });
    try {
      const one = await second.generate(ask('List the files in /app.'), sampling);
      assert.equal(one.contextSequences, 1);
      assert.equal(one.promptTokensFromDisk, one.promptTokenIds.length - 1, 'the N=1 request loads the 1-sequence context\'s entry');
      const two = await second.generate(ask('List the files in /app.'), { ...sampling, n: 2 });
      assert.equal(two.contextSequences, 2);
      assert.equal(two.promptTokensFromDisk, two.promptTokenIds.length - 1, 'the N=2 request loads the 2-sequence context\'s entry');
      assert.equal(two.promptTokensEvaluated, 2, 'and copies it to its second sequence');
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
