// `tbrl env-server` spawned as the trainer spawns it (the CLI through tsx), on real Docker.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { LABEL_RUN } from '../../src/core/sandbox/types';
import { REPO, loadVector, makeTask, scratch } from '../unit/trainer-fixtures';

const root = scratch('tbrl-envserver-');
const task = makeTask(root, 'env-tiny');
const servers: Server[] = [];
// A failed assertion must not leave a server (and its container) behind: EOF makes it clean up.
after(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.end();
  rmSync(root, { recursive: true, force: true });
});
const docker = new Docker();

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- replies are checked field by field below
type Loose = Record<string, any>;
interface Reply { id: number | null; result?: Loose; error?: { code: number; message: string; data?: Loose } }

class Server {
  readonly proc: ChildProcessWithoutNullStreams;
  private next = 1;
  private waiting = new Map<number | null, (r: Reply) => void>();
  stderr = '';
  readonly raw: string[] = [];

  constructor() {
    servers.push(this);
    this.proc = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src', 'cli', 'main.ts'), 'env-server'], { cwd: REPO });
    if (process.env.TBRL_DEBUG_ENVSERVER) this.proc.stderr.pipe(process.stderr);
    this.proc.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    createInterface({ input: this.proc.stdout }).on('line', (line) => {
      this.raw.push(line);
      const r = JSON.parse(line) as Reply;
      this.waiting.get(r.id)?.(r);
      this.waiting.delete(r.id);
    });
  }

  call(method: string, params?: unknown): Promise<Reply> {
    const id = this.next++;
    return this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) }, id);
  }

  send(msg: unknown, id: number | null, raw?: string): Promise<Reply> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.proc.stdin.write((raw ?? JSON.stringify(msg)) + '\n');
    });
  }

  end(): Promise<number | null> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null) return resolve(this.proc.exitCode);
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 60_000);
      this.proc.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
      this.proc.stdin.end();
    });
  }
}

async function containersOf(runId: string): Promise<number> {
  return (await docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${runId}`] } })).length;
}

test('an episode over JSON-RPC: reset, bash step, parse error, finish with reward, credit; EOF removes the container', async () => {
  const s = new Server();
  const init = await s.call('initialize');
  assert.deepEqual(init.result?.methods, ['initialize', 'reset', 'step', 'evaluate', 'credit', 'close', 'shutdown']);

  const reset = await s.call('reset', { task, maxSteps: 6 });
  assert.ok(reset.result, JSON.stringify(reset.error));
  const runId = reset.result.info.runId as string;
  assert.match(reset.result.observation, /Write the line tbrl-dryrun-probe into \/tmp\/tbrl-dryrun-probe\./);
  assert.deepEqual(reset.result.messages.map((m: { role: string }) => m.role), ['system', 'user']);
  assert.ok((await containersOf(runId)) >= 1, 'the task container (and its tracer) run');

  const write = await s.call('step', { action: 'Writing it.\n<bash>\ncmd: echo tbrl-dryrun-probe > /tmp/tbrl-dryrun-probe && wc -c /tmp/tbrl-dryrun-probe\n</bash>', tokens: 30 });
  assert.equal(write.result?.done, false);
  assert.match(write.result?.observation, /18 \/tmp\/tbrl-dryrun-probe/);
  assert.deepEqual(write.result?.info.actions, [{ kind: 'bash', ok: true, exitCode: 0 }]);

  const bad = await s.call('step', { action: '<bash>\ncmd: [oops\n</bash>', tokens: 10 });
  assert.equal(bad.result?.info.parseErrors, 1);
  assert.equal(bad.result?.done, false);

  // A turn with no action tag is a parse error the policy reads on its next turn, as in `tbrl run`.
  const prose = await s.call('step', { action: 'I will now look at the file.', tokens: 8 });
  assert.equal(prose.result?.done, false);
  assert.equal(prose.result?.info.parseErrors, 1);
  assert.match(prose.result?.observation, /contained no action/);

  const look = await s.call('step', { action: '<bash>\ncmd: cat /tmp/tbrl-dryrun-probe\n</bash>', tokens: 10 });
  assert.match(look.result?.observation, /tbrl-dryrun-probe/);

  const fin = await s.call('step', { action: '<finish>\nmessage: done\n</finish>', tokens: 5 });
  assert.equal(fin.result?.done, true);
  assert.equal(fin.result?.info.endReason, 'finished');
  assert.equal(fin.result?.reward, 1);
  assert.equal(fin.result?.info.rewardRecord.tests, 1);

  const credit = await s.call('credit', { groupAdvantage: 2 });
  const tokens = [30, 10, 8, 10, 5];
  assert.equal(credit.result?.factors.length, tokens.length);
  assert.deepEqual(credit.result?.stepTokens, tokens);
  const adv = credit.result?.advantages as number[];
  const mean = adv.reduce((a, x, i) => a + x * tokens[i], 0) / tokens.reduce((a, t) => a + t, 0);
  assert.ok(Math.abs(mean - 2) < 1e-12, 'token-weighted mean of Â_t is Â_i');
  if (!credit.result?.fallback) {
    // Traced: the writer of the file the verifier read is the step with the most credit.
    assert.equal(Math.max(...credit.result!.factors), credit.result!.factors[0]);
    assert.ok(credit.result!.resources.files.includes('/tmp/tbrl-dryrun-probe'));
  }

  const after = await s.call('step', { action: '<bash>\ncmd: ls\n</bash>' });
  assert.equal(after.error?.data?.code, 'env-episode-done');
  assert.match(after.error?.data?.fix, /reset/);

  assert.equal(await s.end(), 0, s.stderr);
  assert.equal(await containersOf(runId), 0, 'EOF closed the sandbox');
  assert.ok(s.raw.every((l) => l.startsWith('{"jsonrpc":"2.0"')), 'stdout carries replies only');
});

test('protocol errors: bad JSON, bad request, unknown method, bad params, step before reset; credit of a DepGPO input', async () => {
  const s = new Server();
  const parse = await s.send(null, null, '{not json');
  assert.equal(parse.error?.code, -32700);
  const invalid = await s.send({ id: 7, method: 'reset' }, 7);
  assert.equal(invalid.error?.code, -32600);
  const unknown = await s.call('teleport');
  assert.equal(unknown.error?.code, -32601);
  const noTask = await s.call('reset', {});
  assert.equal(noTask.error?.data?.code, 'env-bad-params');
  const badSteps = await s.call('reset', { task, maxSteps: 0 });
  assert.match(badSteps.error?.message ?? '', /maxSteps must be a positive integer/);
  const early = await s.call('step', { action: 'x' });
  assert.equal(early.error?.data?.code, 'env-no-episode');
  const v = loadVector('03-stdout-beta') as ReturnType<typeof loadVector> & { expected: { commandScores: number[] } };
  const credit = await s.call('credit', { input: v.input });
  assert.deepEqual(credit.result?.factors, v.expected.factors);
  assert.deepEqual(credit.result?.commandScores, v.expected.commandScores);
  const bye = await s.call('shutdown');
  assert.deepEqual(bye.result, { ok: true });
  assert.equal(await s.end(), 0);
});

test('SIGTERM mid-episode (a stopped Ray job) still removes the container', async () => {
  const s = new Server();
  const reset = await s.call('reset', { task, maxSteps: 3, trace: false });
  const runId = reset.result?.info.runId as string;
  assert.ok((await containersOf(runId)) >= 1);
  const exited = new Promise<number | null>((r) => s.proc.on('exit', (code) => r(code)));
  s.proc.kill('SIGTERM');
  assert.equal(await exited, 143, s.stderr);
  assert.equal(await containersOf(runId), 0);
});

test('evaluate scores an episode the trainer cut short, once', async () => {
  const s = new Server();
  await s.call('reset', { task, maxSteps: 10, trace: false });
  const w = await s.call('step', { action: '<bash>\ncmd: echo tbrl-dryrun-probe > /tmp/tbrl-dryrun-probe\n</bash>' });
  assert.equal(w.result?.done, false);
  const e = await s.call('evaluate', {});
  assert.equal(e.result?.reward, 1);
  assert.equal(e.result?.info.endReason, 'max-steps');
  const again = await s.call('evaluate', { endReason: 'max-time' });
  assert.equal(again.result?.reward, 1);
  assert.equal(again.result?.info.endReason, 'max-steps', 'the first end stands');
  const late = await s.call('step', { action: '<bash>\ncmd: ls\n</bash>' });
  assert.equal(late.error?.data?.code, 'env-episode-done');
  assert.equal(await s.end(), 0);
});
