/**
 * Tracing against real containers: one task sandbox (the python stand-in, which has no strace)
 * traced from the helper container, shared by the cases to keep the suite lean.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createDockerProvider, type Sandbox } from '../../src/core/sandbox/index';
import { LABEL_KIND, LABEL_RUN } from '../../src/core/sandbox/types';
import { createTracedSandbox, type TracedSandbox } from '../../src/core/trace/index';
import { readThroughArchive, type FileContent } from '../../src/core/trace/file-content';

const provider = createDockerProvider();
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-trace-it-'));
const logPath = join(scratch, 'strace.log');
const MAX_LOG = 256 * 1024;
let inner: Sandbox;
let sb: TracedSandbox;

describe('tracing commands in a real container', () => {
  before(async () => {
    inner = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `test-trace-${process.pid}` });
    sb = await createTracedSandbox(inner, { logPath, maxLogBytes: MAX_LOG, maxEventsPerCommand: 5000 });
    assert.equal(sb.info.tracing.available, true, sb.info.tracing.reason);
    const noStrace = await sb.exec('command -v strace || echo none');
    assert.match(noStrace.output, /none/, 'the task image itself has no strace');
  });

  after(async () => {
    await sb?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("the helper joins the task container's network namespace instead of making one (a namespace per helper doubled its start)", async () => {
    const helpers = await provider.docker.listContainers({ filters: { label: [`${LABEL_KIND}=tracer`, `${LABEL_RUN}=test-trace-${process.pid}`] } });
    assert.equal(helpers.length, 1);
    const helper = await provider.docker.getContainer(helpers[0].Id).inspect();
    assert.equal(helper.HostConfig.NetworkMode, `container:${inner.info.containerId}`);
    assert.equal(helper.HostConfig.PidMode, `container:${inner.info.containerId}`);
  });

  it('a write of three lines, then a read of the file', async () => {
    const w = await sb.exec('mkdir -p /app && printf "one\\ntwo\\nthree\\n" > /app/notes.txt', { trace: true });
    assert.equal(w.exitCode, 0);
    assert.deepEqual(w.trace?.writes, [{ path: '/app/notes.txt', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 3 }], linesAfter: 3, created: true }]);
    assert.deepEqual(w.trace?.reads, []);
    const r = await sb.exec('grep -c o /app/notes.txt', { trace: true });
    assert.equal(r.output.trim(), '2');
    assert.deepEqual(r.trace?.reads, ['/app/notes.txt']);
    assert.deepEqual(r.trace?.writes, []);
    assert.equal(r.trace?.incomplete, undefined);
  });

  it('readFiles (the snapshot\'s read) answers as the archive API does, symlinks and paths under them included', async () => {
    // /app/rf/etc links to the task's /etc: through /proc/<pid>/root in the helper it would reach the
    // helper's /etc (which has no tbrl-rf-marker), so such paths must come from the archive API.
    await sb.exec('mkdir -p /app/rf/dir && printf "a\\nb\\n" > /app/rf/a.txt && ln -sfn /etc /app/rf/etc && ln -sf a.txt /app/rf/flink && ln -sf /app/rf/a.txt /app/rf/abslink && mkfifo /app/rf/pipe && echo task-etc > /etc/tbrl-rf-marker');
    const paths = ['/app/rf/a.txt', '/app/rf/etc/tbrl-rf-marker', '/app/rf/flink', '/app/rf/abslink', '/app/rf/dir', '/app/rf/missing', '/app/rf/a.txt/under-a-file', '/app/rf/pipe'];
    const batched = await sb.readFiles(paths);
    const oneByOne = await Promise.allSettled(paths.map((p) => readThroughArchive((q) => inner.getArchive(q), p)));
    const show = (r: PromiseSettledResult<FileContent>) => {
      if (r.status === 'rejected') return `error ${(r.reason as Error).message}`;
      const c = r.value;
      return c.kind === 'file' ? `file ${c.content.toString()}` : c.kind === 'other' ? `other ${c.why}` : c.kind;
    };
    assert.deepEqual(batched.map(show), oneByOne.map(show));
    assert.equal(show(batched[1]), 'file task-etc\n', 'the task container\'s /etc, not the helper\'s');
    assert.deepEqual(batched.slice(0, 6).map(show), ['file a\nb\n', 'file task-etc\n', 'file a\nb\n', 'file a\nb\n', 'other directory', 'absent']);
    // A path under a file: the daemon's refusal, for that path alone.
    assert.match(show(batched[6]), /^error .*not a directory/);
    assert.equal(show(batched[7]), 'other fifo');
  });

  it('an overwrite with identical content writes no lines; an edit writes only its line', async () => {
    const same = await sb.exec('printf "one\\ntwo\\nthree\\n" > /app/notes.txt', { trace: true });
    assert.deepEqual(same.trace?.writes, [{ path: '/app/notes.txt', hunks: [], linesAfter: 3 }]);
    const edit = await sb.exec('sed -i "s/two/TWO/" /app/notes.txt', { trace: true });
    assert.deepEqual(edit.trace?.writes, [{ path: '/app/notes.txt', hunks: [{ oldStart: 2, oldLines: 1, newStart: 2, newLines: 1 }], linesAfter: 3 }]);
    assert.deepEqual(edit.trace?.reads, ['/app/notes.txt']);
  });

  it('cd and relative paths resolve to absolute paths, in later commands too', async () => {
    await sb.exec('mkdir -p /srv/data/sub && echo seed > /srv/data/seed.txt');
    const r = await sb.exec('cd /srv/data/sub && cat ../seed.txt > copy.txt && (cd .. && echo x >> log.txt)', { trace: true });
    assert.deepEqual(r.trace?.reads, ['/srv/data/seed.txt']);
    assert.deepEqual(r.trace?.writes.map((w) => w.path).sort(), ['/srv/data/log.txt', '/srv/data/sub/copy.txt']);
    const later = await sb.exec('wc -l copy.txt', { trace: true });
    assert.deepEqual(later.trace?.reads, ['/srv/data/sub/copy.txt']);
    await sb.exec('cd /');
  });

  it('a file in the original image is diffed against its image content', async () => {
    const r = await sb.exec('echo extra >> /etc/debian_version', { trace: true });
    assert.deepEqual(r.trace?.writes, [{ path: '/etc/debian_version', hunks: [{ oldStart: 1, oldLines: 0, newStart: 2, newLines: 1 }], linesAfter: 2 }]);
  });

  it('a file action through the traced sandbox is the "before" of the next command', async () => {
    await sb.writeFile('/app/conf.ini', 'a=1\nb=2\nc=3\n');
    const r = await sb.exec('sed -i "s/c=3/c=4/" /app/conf.ini', { trace: true });
    assert.deepEqual(r.trace?.writes, [{ path: '/app/conf.ini', hunks: [{ oldStart: 3, oldLines: 1, newStart: 3, newLines: 1 }], linesAfter: 3 }]);
  });

  it('deleting a file and renaming one over another', async () => {
    await sb.exec('printf "x\\ny\\n" > /app/a.txt && printf "z\\n" > /app/b.txt', { trace: true });
    const r = await sb.exec('rm /app/b.txt && mv /app/a.txt /app/c.txt', { trace: true });
    const byPath = Object.fromEntries((r.trace?.writes ?? []).map((w) => [w.path, w]));
    assert.deepEqual(byPath['/app/b.txt'], { path: '/app/b.txt', hunks: [{ oldStart: 1, oldLines: 1, newStart: 0, newLines: 0 }], deleted: true, linesAfter: 0 });
    assert.deepEqual(byPath['/app/a.txt'], { path: '/app/a.txt', hunks: [{ oldStart: 1, oldLines: 2, newStart: 0, newLines: 0 }], deleted: true, linesAfter: 0 });
    assert.deepEqual(byPath['/app/c.txt'], { path: '/app/c.txt', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], created: true, linesAfter: 2 });
  });

  it('stdout values', async () => {
    const r = await sb.exec('echo "wrote /app/out/result.json"; echo "listening on port 9123"; echo "job id 3f2a9c1e-8b7d-4c6e-9f01-23456789abcd"', { trace: true });
    assert.deepEqual(r.trace?.stdoutValues, ['3f2a9c1e-8b7d-4c6e-9f01-23456789abcd', '/app/out/result.json', '9123']);
  });

  it('a background server: its port and its outliving process; the verifier probing and inspecting it', async () => {
    // Waits until the port listens (0x223D = 8765 in /proc/net/tcp), as an agent would before using it.
    const start = await sb.exec(
      'cd /app; python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & echo $! > /app/server.pid; cd /; ' +
        'for i in $(seq 200); do grep -q ":223D " /proc/net/tcp && break; sleep 0.05; done',
      { trace: true },
    );
    assert.deepEqual(start.trace?.ports, [8765]);
    const pid = (await sb.exec('cat /app/server.pid')).output.trim();
    assert.deepEqual(start.trace?.processes, [`${pid}:python3`]);
    const quick = await sb.exec('true', { trace: true });
    assert.deepEqual(quick.trace?.processes, [], 'a command that starts nothing leaves nothing running');

    const verify = [
      `python3 - <<'EOF'`,
      'import os, socket, urllib.request',
      `pid = int(open('/app/server.pid').read())`,
      `os.kill(pid, 0)`,
      `open(f'/proc/{pid}/cmdline').read()`,
      `s = socket.socket(); r = s.connect_ex(('127.0.0.1', 8766)); s.close()`,
      `urllib.request.urlopen('http://127.0.0.1:8765/notes.txt').read()`,
      `open('/tmp/verifier-report.txt', 'w').write('ok')`,
      'EOF',
    ].join('\n');
    const { result, verifier } = await sb.traceVerifier(verify);
    assert.equal(result.exitCode, 0, result.output);
    assert.ok(verifier);
    assert.deepEqual(verifier.ports.sort(), [8765, 8766], 'refused probes count as probes');
    assert.deepEqual(verifier.processes, [`${pid}:python3`]);
    assert.ok(verifier.reads.includes('/app/server.pid'));
    assert.deepEqual(verifier.writes, ['/tmp/verifier-report.txt']);
    await sb.exec(`kill ${pid}`);
  });

  it('a port bound a moment after the command returned still belongs to it', async () => {
    const r = await sb.exec(
      `sh -c 'sleep 0.1; exec python3 -c "import socket, time; s = socket.socket(); s.bind((\\"127.0.0.1\\", 8777)); s.listen(); time.sleep(60)"' >/dev/null 2>&1 &`,
      { trace: true },
    );
    assert.deepEqual(r.trace?.ports, [8777]);
    assert.ok(r.trace?.processes.some((p) => p.endsWith(':python3')), JSON.stringify(r.trace?.processes));
  });

  it('per-command events are capped and the raw log never exceeds its budget', async () => {
    const r = await sb.exec('for i in $(seq 6000); do : > /tmp/many-$((i % 7)); done; rm -f /tmp/many-*', { trace: true });
    assert.equal(r.exitCode, 0);
    assert.match(r.trace?.incomplete ?? '', /syscall events beyond the per-command cap were dropped/);
    const follow = await sb.exec('cat /app/notes.txt', { trace: true });
    assert.deepEqual(follow.trace?.reads, ['/app/notes.txt'], 'the next command is traced normally');
    assert.ok(existsSync(`${logPath}.1`), 'the log rotated');
    const total = statSync(logPath).size + statSync(`${logPath}.1`).size;
    assert.ok(total <= MAX_LOG, `log files hold ${total} bytes`);
  });

  it('output of background jobs arriving between commands still reaches the caller', async () => {
    await sb.exec('{ sleep 0.3; echo LATE-OUTPUT; } &', { trace: true });
    await new Promise((r) => setTimeout(r, 800));
    const r = await sb.exec('echo now', { trace: true });
    assert.match(r.output, /LATE-OUTPUT[\s\S]*now/);
    assert.doesNotMatch(r.output, /__TBRL_TRACE_PID__/);
  });

  it('a timeout kills the command, and the next command is traced again', async () => {
    const slow = await sb.exec('sleep 30', { trace: true, timeoutMs: 1500 });
    assert.equal(slow.timedOut, true);
    const next = await sb.exec('cat /app/notes.txt', { trace: true });
    assert.equal(next.exitCode, 0);
    assert.deepEqual(next.trace?.reads, ['/app/notes.txt']);
  });

  it('after `exit` a new shell is traced too', async () => {
    await sb.exec('exit 3', { trace: true });
    const next = await sb.exec('cat /app/notes.txt', { trace: true });
    assert.equal(next.exitCode, 0, next.output);
    assert.equal(next.output, 'one\nTWO\nthree\n');
    const again = await sb.exec('cat /app/conf.ini', { trace: true });
    assert.deepEqual(again.trace?.reads, ['/app/conf.ini']);
  });

  it('a checkpoint carries the traced shell\'s cwd and exported environment', async () => {
    await sb.exec('cd /srv/data && export TRACE_CP_VAR=kept');
    const cp = await sb.checkpoint(1);
    try {
      assert.equal(cp.cwd, '/srv/data');
      assert.equal(cp.env.TRACE_CP_VAR, 'kept');
    } finally {
      await provider.removeCheckpoint(cp);
      await sb.exec('cd /');
    }
  });

  it('untraced execs pass through untouched', async () => {
    const r = await sb.exec('echo plain');
    assert.equal(r.output, 'plain\n');
    assert.equal(r.trace, undefined);
  });
});

describe('attach mode (strace -p from the helper, the fallback when shell mode cannot start)', () => {
  it('traces writes and reads of the sandbox\'s own shell', async () => {
    const plain = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `test-trace-attach-${process.pid}` });
    const sb3 = await createTracedSandbox(plain, { mode: 'attach' });
    try {
      assert.match(sb3.info.tracing.method ?? '', /helper container/);
      const w = await sb3.exec('cd /tmp && printf "1\\n2\\n3\\n" > three.txt', { trace: true });
      assert.deepEqual(w.trace?.writes, [{ path: '/tmp/three.txt', hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 3 }], linesAfter: 3, created: true }]);
      const r = await sb3.exec('wc -l three.txt', { trace: true });
      assert.deepEqual(r.trace?.reads, ['/tmp/three.txt']);
    } finally {
      await sb3.close();
    }
  });
});

describe('tracing unavailable', () => {
  it('degrades to untraced execs and says why', async () => {
    const plain = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `test-trace-off-${process.pid}` });
    const sb2 = await createTracedSandbox(plain, { tracerImage: 'tbrl-standin/no-such-tracer:none' });
    try {
      assert.equal(sb2.info.tracing.available, false);
      assert.match(sb2.info.tracing.reason ?? '', /tracer image tbrl-standin\/no-such-tracer:none is missing; build it with `node scripts\/build-standins.mjs`/);
      const r = await sb2.exec('echo hi > /tmp/x && cat /tmp/x', { trace: true });
      assert.equal(r.exitCode, 0);
      assert.equal(r.output, 'hi\n');
      assert.equal(r.trace, undefined);
      const v = await sb2.traceVerifier('true');
      assert.equal(v.verifier, undefined);
    } finally {
      await sb2.close();
    }
  });
});
