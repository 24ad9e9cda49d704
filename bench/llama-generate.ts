import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { LlamaContextSequence, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/**
 * node-llama-cpp's own generation, the in-process baselines' measure: `seq` goes back to the prompt
 * minus its last token (already evaluated), then `tokens` tokens are sampled (temperature 0.8,
 * `seed`); tokens per second of that generation.
 */
export async function inProcessTokensPerSecond(seq: LlamaContextSequence, prompt: Token[], tokens: number, seed: number): Promise<number> {
  const cached = seq.contextTokens.length;
  if (cached > prompt.length - 1) await seq.eraseContextTokenRanges([{ start: prompt.length - 1, end: cached }]);
  const t0 = performance.now();
  let n = 0;
  for await (const token of seq.evaluate(prompt.slice(-1), { temperature: 0.8, seed })) {
    void token;
    if (++n >= tokens) break;
  }
  return n / ((performance.now() - t0) / 1000);
}

/** A raw JSON POST to `tbrl serve` (no client library on the timed path), answered with the body text. */
export function post(url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
