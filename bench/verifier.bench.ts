/**
 * Mid-Harness verifier cost per step against a local OpenAI-compatible server with a fixed
 * 200 ms latency per call, N = 8 candidates, all modes in the same run.
 *
 *   node --import tsx bench/verifier.bench.ts [--steps 5] [--latency 200] [--n 8]
 *
 * Baseline: one plain generator call (n = 1). For each mode a step is one generator call with
 * n = 8 followed by the verifier. Targets (issue 6): pairwise step ≤ 2.5× a single call (its 28
 * calls run in parallel), listwise verifier ≤ 1.2× a single call on top of generation.
 */
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { startOpenAIServer, type ChatRequestRecord, type Reply } from '../test/helpers/openai-server';
import { ModelClient } from '../src/core/model/client';
import { MidHarnessVerifier } from '../src/core/verifier/verifier';
import { VERIFIER_MODES } from '../src/core/verifier/types';
import type { ChatMessage } from '../src/core/model/types';

const { values } = parseArgs({ options: { steps: { type: 'string' }, latency: { type: 'string' }, n: { type: 'string' }, serve: { type: 'boolean' } } });
const STEPS = Number(values.steps ?? 5);
const LATENCY = Number(values.latency ?? 200);
const N = Number(values.n ?? 8);

const candidates = Array.from({ length: N }, (_, i) => `<think>option ${i}</think>\n<bash>\ncmd: ls /app/dir${i} && cat /app/dir${i}/notes.txt\n</bash>`);
const reasoning = 'The candidate inspects the directory before changing anything, which matches the exploration phase; it does not repeat the failed command. ';

/** Answers in each prompt's format; verifier answers are of realistic length so token counts mean something. */
function respond(req: ChatRequestRecord): Reply {
  const sys = req.messages[0]?.content ?? '';
  if (sys.includes('ranks every candidate')) return `${reasoning.repeat(2)}\nRANKING: ${Array.from({ length: N }, (_, i) => String.fromCharCode(65 + ((i + 3) % N))).join(' > ')}`;
  if (sys.includes('ONE candidate')) return `${reasoning}\nSCORE: ${(req.messages[1].content.length % 10)}`;
  if (sys.includes('TWO candidates')) return `${reasoning}\nWINNER: ${req.messages[1].content.length % 2 ? 'A' : 'B'}\nMARGIN: 2`;
  if (sys.includes('letter only')) return 'D';
  return req.n > 1 ? candidates.slice(0, req.n) : [candidates[0]];
}

const history: ChatMessage[] = [
  { role: 'system', content: 'You are a terminal agent.'.repeat(20) },
  { role: 'user', content: 'Make the failing tests in /app pass without changing the tests.' },
  { role: 'assistant', content: '<bash>\ncmd: ls /app\n</bash>' },
  { role: 'user', content: '<bash_output>\nexit_code: 0\nmain.py tests dir0 dir1 dir2\n</bash_output>' },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * The server runs in its own process, like a real endpoint: in-process it would compete with the
 * client for the event loop and bill its own JSON work to the verifier.
 */
async function startServerProcess(): Promise<{ baseUrl: string; close: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, '--serve', '--latency', String(LATENCY), '--n', String(N)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return { baseUrl: first.trim(), close: () => child.kill() };
}

async function serve() {
  const srv = await startOpenAIServer({ latencyMs: LATENCY, respond });
  console.log(srv.baseUrl);
  process.on('SIGTERM', () => void srv.close().then(() => process.exit(0)));
}

async function main() {
  const srv = await startServerProcess();
  const endpoint = { baseUrl: srv.baseUrl, model: 'bench', maxRetries: 0 };
  const gen = new ModelClient(endpoint);
  try {
    await gen.sample(history, 1); // warm the connection pool so the first mode is not charged for it

    const single: number[] = [];
    for (let s = 0; s < STEPS; s++) {
      const t0 = performance.now();
      await gen.sample(history, 1);
      single.push(performance.now() - t0);
    }
    const base = median(single);
    const genN: number[] = [];
    for (let s = 0; s < STEPS; s++) {
      const t0 = performance.now();
      await gen.sample(history, N);
      genN.push(performance.now() - t0);
    }

    const rows: string[][] = [];
    const results: Record<string, { step: number; verifier: number }> = {};
    for (const mode of VERIFIER_MODES) {
      const v = new MidHarnessVerifier({ mode, endpoint, concurrency: 64 });
      const stepMs: number[] = [];
      const verMs: number[] = [];
      let calls = 0;
      let out = 0;
      let par = 0;
      for (let s = 0; s < STEPS; s++) {
        const t0 = performance.now();
        const sample = await gen.sample(history, N);
        const t1 = performance.now();
        const d = await v.select({ messages: history, candidates: sample.completions.map((c) => c.text) });
        const t2 = performance.now();
        if (d.fallback) throw new Error(`${mode} fell back: ${d.fallback}`);
        stepMs.push(t2 - t0);
        verMs.push(t2 - t1);
        calls += d.calls;
        out += d.outputTokens;
        par += d.parallelOutputTokens;
      }
      const step = median(stepMs);
      const ver = median(verMs);
      results[mode] = { step, verifier: ver };
      rows.push([mode, (calls / STEPS).toFixed(0), (out / STEPS).toFixed(0), (par / STEPS).toFixed(0), ver.toFixed(0), step.toFixed(0), (ver / base).toFixed(2), (step / base).toFixed(2)]);
    }

    console.log(`Mid-Harness verifier bench: N=${N}, ${LATENCY} ms per call, median of ${STEPS} steps per mode`);
    console.log(`single plain generator call (n=1): ${base.toFixed(0)} ms;  generation with n=${N}: ${median(genN).toFixed(0)} ms\n`);
    const head = ['mode', 'calls/step', 'out tok/step', 'parallel out tok', 'verifier ms', 'step ms', 'verifier/single', 'step/single'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const fmt = (r: string[]) => r.map((c, i) => c.padStart(widths[i])).join('  ');
    console.log(fmt(head));
    for (const r of rows) console.log(fmt(r));

    const pairwiseOk = results.pairwise.step / base <= 2.5;
    const listwiseOk = results.listwise.verifier / base <= 1.2;
    console.log(`\ntarget pairwise step ≤ 2.5× single call: ${(results.pairwise.step / base).toFixed(2)}× ${pairwiseOk ? 'OK' : 'MISSED'}`);
    console.log(`target listwise ≤ 1.2× single call + generation: verifier ${(results.listwise.verifier / base).toFixed(2)}× ${listwiseOk ? 'OK' : 'MISSED'}`);
    process.exitCode = pairwiseOk && listwiseOk ? 0 : 1;
  } finally {
    srv.close();
  }
}

void (values.serve ? serve() : main());
