import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { TraceWindows } from '../../src/core/trace/windows';
import { RotatingLog } from '../../src/core/trace/rotating-log';

const mark = (pid: number, n: number, phase: string) => `${pid} openat(AT_FDCWD</app>, "/.tbrl-mark-${n}-${phase}", O_RDONLY) = -1 ENOENT (No such file or directory)`;

test('events are cut into windows by markers; events between windows are not kept but update state', async () => {
  const w = new TraceWindows(10, '/app', 1000);
  w.onLine('10 chdir("/srv") = 0');
  w.onLine(mark(10, 1, 'begin'));
  w.onLine('10 openat(AT_FDCWD, "in.txt", O_RDONLY) = 3');
  w.onLine(mark(10, 1, 'end'));
  w.onLine('10 openat(AT_FDCWD, "between.txt", O_RDONLY) = 3');
  const first = await w.waitForEnd(1, 100);
  assert.deepEqual(first?.events.map((e) => (e.kind === 'open' ? e.path : e.kind)), ['/srv/in.txt']);
  const pending = w.waitForEnd(2, 1000);
  w.onLine(mark(10, 2, 'begin'));
  w.onLine('10 openat(AT_FDCWD, "x", O_WRONLY|O_CREAT, 0644) = 3');
  w.onLine(mark(10, 2, 'end'));
  const second = await pending;
  assert.equal(second?.events.length, 1);
  assert.equal(await w.waitForEnd(3, 50), undefined, 'a window that never ends times out');
});

test('a window keeps at most the cap and counts the rest', async () => {
  const w = new TraceWindows(10, '/', 3);
  w.onLine(mark(10, 1, 'begin'));
  for (let i = 0; i < 10; i++) w.onLine(`10 openat(AT_FDCWD, "/f${i}", O_RDONLY) = 3`);
  w.onLine(mark(10, 1, 'end'));
  const win = await w.waitForEnd(1, 100);
  assert.equal(win?.events.length, 3);
  assert.equal(win?.dropped, 7);
});

test('settle follows the given processes and their children after the window, until quiet', async () => {
  const w = new TraceWindows(10, '/', 100);
  const settling = w.settle([30], 80, 2000);
  w.onLine('30 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x1) = 31');
  w.onLine('31 bind(3<socket:[1]>, {sa_family=AF_INET, sin_port=htons(7000), sin_addr=inet_addr("0.0.0.0")}, 16) = 0');
  w.onLine('99 bind(3<socket:[2]>, {sa_family=AF_INET, sin_port=htons(7001), sin_addr=inet_addr("0.0.0.0")}, 16) = 0');
  const t0 = Date.now();
  const late = await settling;
  assert.ok(Date.now() - t0 < 1500, 'stops once quiet');
  assert.deepEqual(late.map((e) => e.kind), ['spawn', 'socket']);
  assert.deepEqual(late.flatMap((e) => (e.kind === 'socket' ? [e.port] : [])), [7000], 'an unrelated process is not followed');
});

test('the rotating log never exceeds its budget and keeps the newest lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-rotlog-'));
  try {
    const path = join(dir, 'trace.log');
    const log = new RotatingLog(path, 10_000);
    for (let i = 0; i < 5000; i++) log.append(`line ${i} ${'x'.repeat(20)}`);
    log.append('y'.repeat(50_000));
    log.append('last line');
    log.close();
    const total = statSync(path).size + statSync(`${path}.1`).size;
    assert.ok(total <= 10_000, `${total} bytes on disk`);
    assert.match(readFileSync(path, 'utf8'), /last line\n$/);
    assert.match(readFileSync(path, 'utf8') + readFileSync(`${path}.1`, 'utf8'), /\[cut\]/, 'an over-long line is cut, not written whole');
    log.remove();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('only the frame shell (the root pid) cuts windows: marker opens by any other pid are ignored and reported as forged', async () => {
  const w = new TraceWindows(10, '/', 1000);
  w.onLine(mark(10, 1, 'begin'));
  w.onLine('10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 11');
  for (let n = 0; n < 8; n++) w.onLine(mark(11, n, 'end'));
  w.onLine(mark(11, 99, 'begin'));
  w.onLine('11 openat(AT_FDCWD, "/tests/conftest.py", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3');
  w.onLine(mark(10, 1, 'end'));
  // Between commands (a background job): reported with the next window.
  w.onLine(mark(12, 2, 'end'));
  w.onLine(mark(10, 2, 'begin'));
  w.onLine(mark(10, 2, 'end'));
  const first = await w.waitForEnd(1, 100);
  assert.ok(first?.events.some((e) => e.kind === 'open' && e.path === '/tests/conftest.py'), 'the write after the forged end marker left the window');
  assert.equal(first?.forgedCount, 9);
  assert.deepEqual(first?.forged?.slice(0, 2), ['/.tbrl-mark-0-end by pid 11', '/.tbrl-mark-1-end by pid 11']);
  assert.equal(first?.forged?.length, 5, 'only the first few are kept');
  const second = await w.waitForEnd(2, 100);
  assert.deepEqual(second?.forged, ['/.tbrl-mark-2-end by pid 12']);
  assert.equal(await w.waitForEnd(99, 20), undefined, 'the forged begin opened no window');
});

test('the command process\'s first `go` drops only its own start-up reads of the user database; a second `go` (or anyone else\'s) is forged', async () => {
  const w = new TraceWindows(10, '/', 1000);
  w.onLine(mark(10, 1, 'begin'));
  w.onLine('10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 11');
  w.onLine('11 openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3');
  // A replaced bash doing work before it says `go`: kept.
  w.onLine('11 openat(AT_FDCWD, "/solution/early", O_RDONLY) = 3');
  w.onLine(mark(11, 1, 'go'));
  w.onLine('11 openat(AT_FDCWD, "/solution/answer", O_RDONLY) = 3');
  w.onLine(mark(11, 1, 'go'));
  w.onLine(mark(77, 1, 'go'));
  w.onLine('11 openat(AT_FDCWD, "/tests/x.py", O_WRONLY|O_CREAT, 0644) = 3');
  w.onLine(mark(10, 1, 'end'));
  const win = await w.waitForEnd(1, 100);
  assert.deepEqual(win?.events.filter((e) => e.kind === 'open').map((e) => (e.kind === 'open' ? e.path : '')), ['/solution/early', '/solution/answer', '/tests/x.py']);
  assert.deepEqual(win?.forged, ['/.tbrl-mark-1-go by pid 11', '/.tbrl-mark-1-go by pid 77']);
  // A window without `go` (a background command) keeps everything from the frame shell's begin.
  w.onLine(mark(10, 2, 'begin'));
  w.onLine('12 openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3');
  w.onLine(mark(10, 2, 'end'));
  assert.equal((await w.waitForEnd(2, 100))?.events.length, 1);
});
