// Docker API calls of any tbrl command, counted and timed: a byte proxy on a unix socket that reads each
// request line and the status line of its answer (hijacked exec streams are timed to their upgrade).
// Used for the per-trial profile in src/core/eval/README.md (issue 17).
// Run: node --import tsx bench/docker-calls.ts OUT.txt -- node dist/cli.js eval TASKS... --attempts 4 --concurrency 8 --policy oracle
//   OUT.txt gets the table (calls, total ms, ms/call per method and path pattern); OUT.txt.jsonl every call.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Call { conn: number; method: string; path: string; key: string; t0: number; t1?: number; status?: number }

const sep = process.argv.indexOf('--');
const out = process.argv[2];
if (!out || sep < 0 || sep === process.argv.length - 1) {
  console.error('usage: node --import tsx bench/docker-calls.ts OUT.txt -- COMMAND ARGS...');
  process.exit(2);
}
const daemon = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
const dir = mkdtempSync(join(tmpdir(), 'tbrl-docker-calls-'));
const listen = join(dir, 'docker.sock');
const calls: Call[] = [];
/** /containers/<id>/start → /containers/:id/start; query strings dropped. */
const pattern = (p: string): string =>
  p.replace(/\?.*$/, '').replace(/^\/v1\.\d+/, '').replace(/\/containers\/(?!create|json)[^/]+/, '/containers/:id').replace(/\/exec\/[^/]+/, '/exec/:id').replace(/\/images\/.+\/json$/, '/images/:name/json').replace(/\/volumes\/[^/]+$/, '/volumes/:name');

let seq = 0;
const server = createServer((client) => {
  const id = ++seq;
  const upstream = connect(daemon);
  const pending: Call[] = [];
  let upgraded = false;
  client.on('data', (b: Buffer) => {
    upstream.write(b);
    if (upgraded) return;
    for (const m of b.toString('latin1').matchAll(/(?:^|\r\n)(GET|POST|PUT|DELETE|HEAD) (\S+) HTTP\/1\.[01]\r\n/g)) {
      const call: Call = { conn: id, method: m[1], path: m[2], key: `${m[1]} ${pattern(m[2])}`, t0: performance.now() };
      pending.push(call);
      calls.push(call);
    }
  });
  upstream.on('data', (b: Buffer) => {
    client.write(b);
    if (upgraded) return;
    for (const m of b.toString('latin1').matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})/g)) {
      const call = pending.shift();
      if (!call) continue;
      call.t1 = performance.now();
      call.status = Number(m[1]);
      if (m[1] === '101') upgraded = true;
    }
  });
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  client.on('error', () => undefined);
  upstream.on('error', () => undefined);
});

server.listen(listen, () => {
  chmodSync(listen, 0o666);
  const [cmd, ...args] = process.argv.slice(sep + 1);
  const t0 = Date.now();
  const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, DOCKER_HOST: `unix://${listen}` } });
  child.on('exit', (code) => {
    const by = new Map<string, { n: number; ms: number }>();
    for (const c of calls) {
      const key = `${c.key} ${c.status ?? '-'}`;
      const e = by.get(key) ?? { n: 0, ms: 0 };
      e.n++;
      e.ms += (c.t1 ?? performance.now()) - c.t0;
      by.set(key, e);
    }
    const rows = [...by].sort((a, b) => b[1].ms - a[1].ms).map(([k, e]) => `${String(e.n).padStart(5)} ${e.ms.toFixed(0).padStart(8)} ms ${(e.ms / e.n).toFixed(0).padStart(6)} ms/call  ${k}`);
    writeFileSync(out, `${calls.length} calls in ${((Date.now() - t0) / 1000).toFixed(1)} s (exit ${code})\n${rows.join('\n')}\n`);
    writeFileSync(`${out}.jsonl`, calls.map((c) => JSON.stringify(c)).join('\n') + '\n');
    server.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(code ?? 1);
  });
});
