import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import * as tar from 'tar-stream';
import { createDockerProvider, SandboxFileError, type Sandbox } from '../../src/core/sandbox/index';
import { readTarEntries } from '../../src/core/sandbox/archive';

const provider = createDockerProvider();
const runId = `test-shell-${process.pid}`;

describe('persistent shell', () => {
  let sb: Sandbox;
  before(async () => {
    sb = await provider.create({ image: { kind: 'image', image: 'debian:bookworm-slim' }, runId, limits: { maxOutputBytes: 64 * 1024 } });
  });
  after(async () => {
    await sb?.close();
  });

  it('keeps cwd and exported environment between commands, and reports exit codes', async () => {
    const first = await sb.exec('mkdir -p /work/a && cd /work/a && export GREETING="hello world" && PLAIN=1');
    assert.equal(first.exitCode, 0);
    const second = await sb.exec('pwd; echo "$GREETING/$PLAIN"; bash -c \'echo child:$GREETING\'');
    assert.equal(second.output, '/work/a\nhello world/1\nchild:hello world\n');
    assert.equal((await sb.exec('false')).exitCode, 1);
    assert.equal((await sb.exec('(exit 42)')).exitCode, 42);
  });

  it('frames output without a trailing newline, quotes, syntax errors and stderr', async () => {
    assert.equal((await sb.exec('printf "no newline"')).output, 'no newline');
    assert.equal((await sb.exec("echo 'single' \"double\" $'ansi\\tc'")).output, 'single double ansi\tc\n');
    const bad = await sb.exec('echo "unterminated');
    assert.equal(bad.exitCode, 2);
    assert.match(bad.output, /unexpected EOF/);
    const mixed = await sb.exec('echo out; echo err >&2; echo out2');
    assert.equal(mixed.output, 'out\nerr\nout2\n');
    // stdin is /dev/null: a command reading stdin ends instead of eating the shell's input.
    const cat = await sb.exec('cat; echo after-cat', { timeoutMs: 5000 });
    assert.equal(cat.output, 'after-cat\n');
    assert.equal(cat.timedOut, false);
    const multi = await sb.exec('for i in 1 2 3; do\n  echo "line $i"\ndone');
    assert.equal(multi.output, 'line 1\nline 2\nline 3\n');
  });

  it('kills a timed-out command and leaves the same shell usable', async () => {
    await sb.exec('export KEEP=still-here; cd /tmp');
    const started = Date.now();
    const r = await sb.exec('sleep 1000', { timeoutMs: 1000 });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    assert.ok(Date.now() - started < 8000, `timeout took ${Date.now() - started} ms`);
    const next = await sb.exec('echo "$KEEP $PWD"; cat /proc/[0-9]*/cmdline | tr "\\0" " "');
    // Same shell (exported variable kept) and the sleep is gone.
    assert.ok(next.output.startsWith('still-here /tmp\n'), next.output);
    assert.doesNotMatch(next.output, /sleep 1000/);
  });

  it('kills a timed-out shell builtin loop like any command, keeping the shell and its state', async () => {
    await sb.exec('cd /work/a && export LOOPED=kept');
    const r = await sb.exec('while :; do :; done', { timeoutMs: 1000 });
    assert.equal(r.timedOut, true);
    // Each command is its own process: the loop dies with it, nothing needs a restart.
    assert.doesNotMatch(r.output, /shell was restarted|Killed|__tbrl/);
    const next = await sb.exec('pwd; echo "$LOOPED"; echo ok');
    assert.equal(next.output, '/work/a\nkept\nok\n');
  });

  it('caps 50 MB of output, keeping head and tail and counting the dropped bytes', async () => {
    const r = await sb.exec('printf "HEAD-"; head -c 52428800 /dev/zero | tr "\\0" x; printf -- "-TAIL"', { maxOutputBytes: 1000 });
    assert.equal(r.exitCode, 0);
    const total = 5 + 52428800 + 5;
    assert.equal(r.droppedBytes, total - 1000);
    assert.ok(r.output.startsWith('HEAD-xxx'));
    assert.ok(r.output.endsWith('xxx-TAIL'));
    assert.match(r.output, new RegExp(`${total - 1000} bytes of output dropped`));
    // Framing intact after a flood.
    assert.equal((await sb.exec('echo next')).output, 'next\n');
  });

  it('survives binary output and invalid UTF-8', async () => {
    const r = await sb.exec('head -c 65536 /dev/urandom; printf "\\n\\xff\\xfe\\xc3"; echo; echo END');
    assert.equal(r.exitCode, 0);
    assert.ok(r.output.endsWith('\n\ufffd\ufffd\ufffd\nEND\n'), JSON.stringify(r.output.slice(-20)));
    assert.equal((await sb.exec('echo clean')).output, 'clean\n');
  });

  it('starts background commands and returns at once', async () => {
    const started = Date.now();
    const r = await sb.exec('sleep 30; echo never', { background: true });
    assert.ok(Date.now() - started < 2000);
    const pid = Number(/pid (\d+)/.exec(r.output)?.[1]);
    assert.ok(pid > 0, r.output);
    const procs = await sb.exec('cat /proc/[0-9]*/cmdline | tr "\\0" " "');
    assert.match(procs.output, /sleep 30/);
    const bg = await sb.exec('echo from-bg > /tmp/bgfile', { background: true });
    assert.match(bg.output, /output in \/tmp\/tbrl-bg-/);
    await sb.exec('sleep 0.3');
    assert.equal((await sb.exec('cat /tmp/bgfile')).output, 'from-bg\n');
    // A timeout of a later command must not kill the earlier background job.
    await sb.exec('sleep 100', { timeoutMs: 500 });
    assert.equal((await sb.exec(`test -d /proc/${pid} && echo up`)).output, 'up\n');
  });

  it('recovers when the agent types exit', async () => {
    await sb.exec('cd /work');
    const r = await sb.exec('exit 3');
    assert.equal(r.exitCode, 3);
    assert.equal((await sb.exec('pwd')).output, '/work\n');
  });

  it('runs argv directly with cwd, env, caps and timeouts', async () => {
    const r = await sb.execArgv(['sh', '-c', 'pwd; echo "$X"; echo e >&2; exit 5'], { cwd: '/tmp', env: { X: 'it works' } });
    assert.equal(r.exitCode, 5);
    assert.equal(r.output, '/tmp\nit works\ne\n');
    const t = await sb.execArgv(['sleep', '1000'], { timeoutMs: 800 });
    assert.equal(t.timedOut, true);
    assert.equal(t.exitCode, null);
    const capped = await sb.execArgv(['head', '-c', '100000', '/dev/zero'], { maxOutputBytes: 100 });
    assert.equal(capped.droppedBytes, 100000 - 100);
    const bgStart = Date.now();
    const bg = await sb.execArgv(['sh', '-c', 'sleep 0.5; echo detached > /tmp/argv-bg'], { background: true });
    assert.equal(bg.exitCode, 0);
    assert.ok(Date.now() - bgStart < 400, 'background execArgv returns before the program ends');
    await new Promise((res) => setTimeout(res, 1200));
    assert.equal((await sb.readFile('/tmp/argv-bg')).toString(), 'detached\n');
    const missing = await sb.execArgv(['no-such-program']);
    assert.equal(missing.exitCode, 127);
  });

  it('reads and writes files of any bytes without shell quoting', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 0x27, 0x22, 0x5c, 0x0a, 0x24]);
    await sb.writeFile("/tmp/new dir/it's $weird\n.bin", bytes, 0o600);
    assert.deepEqual(await sb.readFile("/tmp/new dir/it's $weird\n.bin"), bytes);
    const mode = await sb.exec("stat -c %a \"/tmp/new dir/it's \\$weird\"$'\\n'.bin");
    assert.equal(mode.output, '600\n');
    await sb.writeFile('/tmp/text.txt', 'héllo\n');
    assert.equal((await sb.readFile('/tmp/text.txt')).toString('utf8'), 'héllo\n');
    await sb.exec('ln -sf /tmp/text.txt /tmp/link.txt');
    assert.equal((await sb.readFile('/tmp/link.txt')).toString('utf8'), 'héllo\n');
    await assert.rejects(sb.readFile('/nope/missing.txt'), SandboxFileError);
    await assert.rejects(sb.readFile('/tmp'), /is a directory/);
  });

  it('puts and gets archives', async () => {
    const pack = tar.pack();
    pack.entry({ name: 'pkg/a.txt' }, 'A');
    pack.entry({ name: 'pkg/b.txt' }, 'B');
    pack.finalize();
    await sb.putArchive(pack as unknown as Readable, '/srv');
    assert.equal((await sb.exec('cat /srv/pkg/a.txt /srv/pkg/b.txt')).output, 'AB');
    const entries = await readTarEntries(await sb.getArchive('/srv/pkg'));
    assert.deepEqual(entries.filter((e) => e.type === 'file').map((e) => `${e.name}=${e.content}`).sort(), ['pkg/a.txt=A', 'pkg/b.txt=B']);
  });
});
