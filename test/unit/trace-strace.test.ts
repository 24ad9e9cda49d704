import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StraceParser, splitArgs, decodeCString, type TraceEvent } from '../../src/core/trace/strace-parser';
import { aggregate, isNoiseRead, isNoiseWrite } from '../../src/core/trace/aggregate';

function parseAll(text: string, parser = new StraceParser(10, '/app')): TraceEvent[] {
  return text.trim().split('\n').flatMap((l) => parser.push(l.trim()));
}

function agg(events: TraceEvent[], parser: StraceParser, writtenBefore = new Set<string>()) {
  return aggregate(events, { writtenBefore, shellPid: 10, commOf: (pid) => parser.commOf(pid) });
}

test('splits arguments at top-level commas only', () => {
  assert.deepEqual(splitArgs('AT_FDCWD</a,b>, "x, y", {sa_family=AF_INET, sin_port=htons(80)}, 16'), [
    'AT_FDCWD</a,b>', '"x, y"', '{sa_family=AF_INET, sin_port=htons(80)}', '16',
  ]);
  assert.equal(decodeCString('"a\\"b\\\\c\\n\\303\\251"'), 'a"b\\c\né');
  assert.equal(decodeCString('NULL'), undefined);
});

test('reads, writes, renames and unlinks with cwd tracking and -y decorations', () => {
  const parser = new StraceParser(10, '/app');
  const events = parseAll(`
10    00:45:34.355904 chdir("/tmp")     = 0
10    00:45:34.356368 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f5387eb0a10) = 11
11    00:45:34.357072 execve("/usr/bin/mkdir", ["mkdir", "d"], 0x5556eb122510 /* 7 vars */) = 0
11    00:45:34.358000 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3
11    00:45:34.359290 openat(AT_FDCWD</tmp>, "/proc/filesystems", O_RDONLY|O_CLOEXEC) = 3</proc/filesystems>
11    00:45:34.359816 +++ exited with 0 +++
10    00:45:34.359919 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=11, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---
10    00:45:34.360031 chdir("d")   = 0
10    00:45:34.360078 openat(AT_FDCWD, "a.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3
10    00:45:34.360923 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f5387eb0a10) = 12
12    00:45:34.362363 execve("/usr/bin/mv", ["mv", "a.txt", "b.txt"], 0x5556eb122510 /* 7 vars */) = 0
12    00:45:34.366390 renameat2(AT_FDCWD</tmp/d>, "a.txt", AT_FDCWD</tmp/d>, "b.txt", RENAME_NOREPLACE) = 0
12    00:45:34.366771 +++ exited with 0 +++
10    00:45:34.367437 openat(AT_FDCWD, "../in.csv", O_RDONLY) = 3
10    00:45:34.367500 openat(AT_FDCWD, "/tmp/d", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3</tmp/d>
10    00:45:34.367600 openat(AT_FDCWD, "missing.txt", O_RDONLY) = -1 ENOENT (No such file or directory)
10    00:45:34.367700 openat(AT_FDCWD, "gone.txt", O_RDONLY) = 4</tmp/d/gone.txt (deleted)>
10    00:45:34.372855 unlinkat(AT_FDCWD, "old.log", 0) = 0
10    00:45:34.372900 unlink("/tmp/d/rel/../x.bin") = 0
`, parser);
  const raw = agg(events, parser);
  assert.deepEqual(raw.reads.sort(), ['/tmp/d/gone.txt', '/tmp/in.csv']);
  assert.deepEqual(raw.written.sort(), ['/tmp/d/a.txt', '/tmp/d/b.txt']);
  assert.deepEqual(raw.removed.sort(), ['/tmp/d/old.log', '/tmp/d/x.bin'], 'a.txt was written in the window, so it is checked as a write');
  assert.equal(parser.cwdOf(10), '/tmp/d');
  assert.equal(parser.cwdOf(11), '/tmp', 'a child keeps the cwd it was forked with');
  assert.deepEqual(raw.outlived, []);
  assert.deepEqual(raw.spawned, [11, 12]);
});

test('a file renamed away and not recreated is removed; renamed onto is written', () => {
  const parser = new StraceParser(10, '/w');
  const raw = agg(parseAll(`
10 rename("a", "b") = 0
`, parser), parser);
  assert.deepEqual(raw.written, ['/w/b']);
  assert.deepEqual(raw.removed, ['/w/a']);
});

test('sed -i style temp file + rename over the original writes only the original', () => {
  const parser = new StraceParser(10, '/w');
  const raw = agg(parseAll(`
10 openat(AT_FDCWD, "./sedAbC", O_RDWR|O_CREAT|O_EXCL, 0600) = 4
10 openat(AT_FDCWD, "f.txt", O_RDONLY) = 3
10 rename("./sedAbC", "f.txt") = 0
`, parser), parser);
  assert.deepEqual(raw.reads, ['/w/f.txt'], 'the temp file was created by this command: opening it O_RDWR reads nothing');
  assert.deepEqual(raw.written.sort(), ['/w/f.txt', '/w/sedAbC']);
  assert.deepEqual(raw.removed, [], 'sedAbC was created and renamed in the same window: the tracer will find it missing and skip it');
});

test('unfinished/resumed halves are joined per pid, interleaved with other pids', () => {
  const parser = new StraceParser(10, '/app');
  const events = parseAll(`
10    00:00:00.1 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>
20    00:00:00.2 openat(AT_FDCWD, "data/x.json", O_RDONLY <unfinished ...>
10    00:00:00.3 <... clone resumed>, child_tidptr=0x7f5387eb0a10) = 21
20    00:00:00.4 <... openat resumed>) = 5
21    00:00:00.5 execve("./server", ["./server"], 0x1 /* 3 vars */ <unfinished ...>
21    00:00:00.6 <... execve resumed>) = 0
`, parser);
  assert.deepEqual(events.map((e) => e.kind), ['spawn', 'open', 'exec']);
  const open = events[1] as Extract<TraceEvent, { kind: 'open' }>;
  assert.equal(open.path, '/app/data/x.json');
  assert.equal(open.read, true);
  const exec = events[2] as Extract<TraceEvent, { kind: 'exec' }>;
  assert.equal(exec.path, '/app/server');
  assert.equal(parser.commOf(21), 'server');
});

test('openat relative to a directory fd and fchdir use the -y decoration', () => {
  const parser = new StraceParser(10, '/');
  const events = parseAll(`
10 openat(7</srv/www>, "index.html", O_RDONLY|O_CLOEXEC) = 3</srv/www/index.html>
10 openat(7</srv/www>, "new.html", O_WRONLY|O_CREAT, 0644) = -1 EACCES (Permission denied)
10 fchdir(7</srv/www>) = 0
10 creat("out.txt", 0644) = 4
`, parser);
  const raw = agg(events, parser);
  assert.deepEqual(raw.reads, ['/srv/www/index.html']);
  assert.deepEqual(raw.written, ['/srv/www/out.txt'], 'a failed open writes nothing');
});

test('a background server: bind port and a process that outlives the window', () => {
  const parser = new StraceParser(10, '/app');
  const raw = agg(parseAll(`
10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x1) = 30
30 execve("/usr/bin/python3", ["python3", "-m", "http.server", "8000"], 0x1 /* 3 vars */) = 0
30 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x1, parent_tid=0x1, exit_signal=0, stack=0x1, stack_size=0x7fff00, tls=0x1} => {parent_tid=[31]}, 88) = 31
30 bind(3<socket:[1]>, {sa_family=AF_INET6, sin6_port=htons(8000), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::", &sin6_addr), sin6_scope_id=0}, 28) = 0
10 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x1) = 32
32 connect(3<socket:[2]>, {sa_family=AF_INET, sin_port=htons(5432), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ECONNREFUSED (Connection refused)
32 connect(3<socket:[3]>, {sa_family=AF_INET, sin_port=htons(6379), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)
32 +++ exited with 1 +++
`, parser), parser);
  assert.deepEqual(raw.ports.sort(), [6379, 8000]);
  assert.deepEqual(raw.probed.sort(), [5432, 6379]);
  assert.deepEqual(raw.outlived, ['30:python3'], 'the thread 31 and the exited 32 are not listed');
});

test('processes inspected through /proc/<pid> and kill, not counting own children', () => {
  const parser = new StraceParser(10, '/app');
  const raw = agg(parseAll(`
10 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x1) = 40
40 openat(AT_FDCWD, "/proc/30/status", O_RDONLY) = 3</proc/30/status>
40 openat(AT_FDCWD, "/proc/40/status", O_RDONLY) = 3</proc/40/status>
40 openat(AT_FDCWD, "/proc/77/cmdline", O_RDONLY) = -1 ENOENT (No such file or directory)
40 openat(AT_FDCWD, "/proc/1/cgroup", O_RDONLY) = 3</proc/1/cgroup>
40 kill(55, 0) = 0
40 +++ exited with 0 +++
10 kill(40, SIGTERM) = 0
`, parser), parser);
  assert.deepEqual(raw.inspectedPids.sort(), [30, 55, 77], 'pid 1 (the container init, read for cgroup limits) is not inspected');
  assert.deepEqual(raw.reads, [], '/proc reads are never file reads');
});

test('markers become mark events and never reads', () => {
  const parser = new StraceParser(10, '/app');
  const events = parseAll(`
10 openat(AT_FDCWD, "/.tbrl-mark-7-begin", O_RDONLY) = -1 ENOENT (No such file or directory)
10 openat(AT_FDCWD, "/.tbrl-mark-7-end", O_RDONLY) = -1 ENOENT (No such file or directory)
`, parser);
  assert.deepEqual(events, [{ kind: 'mark', pid: 10, n: 7, phase: 'begin' }, { kind: 'mark', pid: 10, n: 7, phase: 'end' }]);
});

test('lines without a pid prefix belong to the root pid; noise lines are ignored', () => {
  const parser = new StraceParser(10, '/app');
  const events = parseAll(`
00:00:01.000 openat(AT_FDCWD, "notes.md", O_RDONLY) = 3
[pid 12] 00:00:01.100 openat(AT_FDCWD, "/abs.txt", O_RDONLY) = 3
strace: Process 12 attached
garbage (
`, parser);
  assert.deepEqual(events.map((e) => (e.kind === 'open' ? `${e.pid}:${e.path}` : e.kind)), ['10:/app/notes.md', '12:/abs.txt']);
});

test('system runtime reads are filtered unless a traced command wrote them', () => {
  const none = new Set<string>();
  assert.equal(isNoiseRead('/usr/lib/python3.11/os.py', none), true);
  assert.equal(isNoiseRead('/usr/lib/x86_64-linux-gnu/libc.so.6', none), true);
  assert.equal(isNoiseRead('/app/lib/libfoo.so', none), true);
  assert.equal(isNoiseRead('/etc/ld.so.cache', none), true);
  assert.equal(isNoiseRead('/usr/bin/python3', none), true);
  assert.equal(isNoiseRead('/etc/nginx/nginx.conf', none), false);
  assert.equal(isNoiseRead('/app/main.py', none), false);
  assert.equal(isNoiseRead('/usr/lib/python3/dist-packages/x.py', new Set(['/usr/lib/python3/dist-packages/x.py'])), false);
  assert.equal(isNoiseRead('/proc/self/status', new Set(['/proc/self/status'])), true);
  // An O_TMPFILE has no name (strace -y shows /tmp/#<inode>): nothing else can ever read it.
  assert.equal(isNoiseRead('/tmp/#2074582', none), true);
  assert.equal(isNoiseWrite('/tmp/#2074582'), true);
  assert.equal(isNoiseRead('/tmp/#notes', none), false);
});

test('exec of a binary outside system prefixes is a read (a build output used later)', () => {
  const parser = new StraceParser(10, '/app');
  const raw = agg(parseAll(`
10 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x1) = 50
50 execve("/usr/bin/cat", ["cat"], 0x1 /* 3 vars */) = 0
50 +++ exited with 0 +++
10 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x1) = 51
51 execve("./a.out", ["./a.out"], 0x1 /* 3 vars */) = 0
51 +++ exited with 0 +++
`, parser), parser);
  assert.deepEqual(raw.reads, ['/app/a.out']);
});

test('metadata writes: chmod, fchmodat, chown, touch (utimensat on a path and on an fd), rename, unlink', () => {
  const parser = new StraceParser(10, '/app');
  const events = parseAll(`
10 chmod("run.sh", 0755) = 0
10 fchmodat(AT_FDCWD</app>, "bin/tool", 0700) = 0
10 fchown(3</app/owned.txt>, 1000, 1000) = 0
10 lchown("/app/link", 0, 0) = 0
10 openat(AT_FDCWD</app>, "done.flag", O_WRONLY|O_CREAT|O_NOCTTY|O_NONBLOCK, 0666) = 3</app/done.flag>
10 utimensat(3</app/done.flag>, NULL, NULL, 0) = 0
10 utimensat(AT_FDCWD</app>, "stamp", NULL, 0) = 0
10 chmod("/app/missing", 0644) = -1 ENOENT (No such file or directory)
10 rename("a.tmp", "a.txt") = 0
10 unlinkat(AT_FDCWD</app>, "old.log", 0) = 0
`, parser);
  const ops = events.filter((e) => e.kind === 'meta').map((e) => `${(e as { op: string }).op} ${(e as { path: string }).path}`);
  assert.deepEqual(ops, ['chmod /app/run.sh', 'chmod /app/bin/tool', 'chown /app/owned.txt', 'chown /app/link', 'utime /app/done.flag', 'utime /app/stamp', 'chmod /app/missing']);
  const raw = agg(events, parser);
  assert.deepEqual(raw.metaWritten.sort(), ['/app/a.tmp', '/app/a.txt', '/app/bin/tool', '/app/done.flag', '/app/link', '/app/old.log', '/app/owned.txt', '/app/run.sh', '/app/stamp']);
});

test('existence checks: access() and failed opens are checked, not read; creating opens are not checks', () => {
  const parser = new StraceParser(10, '/app');
  const raw = agg(parseAll(`
10 faccessat2(AT_FDCWD</app>, "run.sh", X_OK, AT_EACCESS) = 0
10 access("/app/gone.log", F_OK) = -1 ENOENT (No such file or directory)
10 openat(AT_FDCWD</app>, "old.log", O_RDONLY) = -1 ENOENT (No such file or directory)
10 openat(AT_FDCWD</app>, "new.txt", O_WRONLY|O_CREAT|O_EXCL, 0644) = -1 EEXIST (File exists)
10 openat(AT_FDCWD</app>, "data.csv", O_RDONLY) = 3</app/data.csv>
10 access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) = 0
`, parser), parser);
  assert.deepEqual(raw.checked.sort(), ['/app/gone.log', '/app/old.log', '/app/run.sh']);
  assert.deepEqual(raw.reads, ['/app/data.csv']);
  assert.deepEqual(raw.metaWritten, []);
});
