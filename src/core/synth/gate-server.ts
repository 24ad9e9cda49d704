import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runProcess } from './host';
import { VERIFIER_RUNNER_PY } from './verifier-runner';

/**
 * The gate server: a warm python3 for the host gates (issue #20). Every gate program is a python3
 * start-up (progress.py, pytest on the verifier, the reference pipeline that pipeline.sh execs, the
 * SQLite readers), and on this host a start-up costs 50-150 ms before any work (pytest's imports
 * alone 350 ms; pyenv's shim adds a bash + `pyenv exec` per call). So the gates put a directory
 * first on PATH whose `python3` is a small C client: it hands its argv, environment, working
 * directory and fds 0-2 to one long-lived interpreter that has already imported pytest and the
 * stdlib the programs use, and that forks a fresh child which runs the program exactly as
 * `python3 SCRIPT`, `-c CODE` or `-m MODULE` would (own __main__, sys.argv, sys.path[0], exit status,
 * death by signal). Any other invocation, or no server, execs the real interpreter.
 *
 * Every program still runs in its own process, from its own file in the probe's workspace: the
 * server imports no task program, so the grader, verifier and solver stay separate programs
 * (noshare.ts) and nothing one of them does survives into the next run.
 */
export interface GatePython {
  /** Variables to add to every host process of the gates (PATH first of all). */
  env: Record<string, string>;
  /** How programs are run: 'warm' (forked from the server) or 'direct' (the real interpreter, no shim). */
  mode: 'warm' | 'direct';
  /**
   * The verifier runner (verifier-runner.ts) written next to the server, when the server is warm and
   * no pytest plugin is installed (an entry-point plugin could change what pytest decides, and the
   * runner does not load plugins); absent otherwise, and the gates run pytest.
   */
  verifierRunner?: string;
  close(): Promise<void>;
}

/** Modules the server imports once; the gate programs import them again for free. */
const PRELOAD = ['pytest', ...['mark', 'main', 'runner', 'fixtures', 'helpconfig', 'python', 'terminal', 'debugging', 'unittest', 'capture', 'skipping', 'legacypath', 'tmpdir', 'monkeypatch', 'recwarn', 'pastebin', 'assertion.rewrite', 'nose', 'junitxml', 'doctest', 'cacheprovider', 'freeze_support', 'setuponly', 'setupplan', 'stepwise', 'warnings', 'logging', 'reports', 'python_path', 'unraisableexception', 'threadexception', 'faulthandler', 'pytester', 'pytester_assertions', 'raises', 'subtests', 'tracemalloc', 'scope', 'timing'].map((m) => `_pytest.${m}`), 'pdb', 'faulthandler', 'codeop', 'csv', 'decimal', 'json', 'sqlite3', 'struct', 'subprocess', 'tempfile', 'shutil', 'hashlib', 'pathlib', 'functools'];

export const ZYGOTE_PY = String.raw`"""Warm python3 for the host gates: imports once, then forks one child per program a client hands over.

Each request (from the C client named python3) carries cwd, argv, the environment and fds 0-2. A
handler child forks the program's process, waits for it, and sends back its exit status (negative:
the signal that killed it). The program runs as python3 SCRIPT, -c CODE or -m MODULE would.
"""
import array
import atexit
import builtins
import gc
import io
import os
import runpy
import select
import signal
import socket
import struct
import sys
import types

ORIGINAL_PATH = list(sys.path[1:])

for name in sys.argv[2:]:
    try:
        __import__(name)
    except Exception:
        pass


def receive(conn):
    fds = array.array("i")
    head, ancillary, _, _ = conn.recvmsg(4, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(head) != 4 or len(fds) != 3:
        raise OSError("bad request")
    (size,) = struct.unpack("=I", head)
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise OSError("short request")
        body += chunk
    parts = bytes(body).split(b"\0")
    cwd = parts[0]
    end = parts.index(b"", 1)
    argv = [os.fsdecode(a) for a in parts[1:end]]
    env = {}
    for item in parts[end + 1:]:
        if b"=" in item:
            key, _, value = item.partition(b"=")
            env[key] = value
    return list(fds), os.fsdecode(cwd), argv, env


def std_streams():
    encoding = sys.stdout.encoding
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=encoding,
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding=encoding,
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def run_program(cwd, argv, env):
    os.chdir(cwd)
    os.environb.clear()
    os.environb.update(env)
    std_streams()
    mode, target, rest = (argv[1], argv[2], argv[3:]) if argv[1] in ("-c", "-m") else (None, argv[1], argv[2:])
    code = 0
    try:
        if mode == "-c":
            sys.argv = ["-c"] + rest
            sys.path[:] = [""] + ORIGINAL_PATH
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = builtins
            sys.modules["__main__"] = main
            exec(compile(target, "<string>", "exec"), main.__dict__)
        elif mode == "-m":
            sys.argv = ["-m"] + rest
            sys.path[:] = [os.getcwd()] + ORIGINAL_PATH
            runpy._run_module_as_main(target, alter_argv=True)
        else:
            sys.argv = [target] + rest
            sys.path[:] = [os.path.dirname(os.path.realpath(target))] + ORIGINAL_PATH
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code & 0xFF
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException as problem:
        # The traceback a plain interpreter would print: without this file's and runpy's frames.
        trace = problem.__traceback__
        while trace is not None and trace.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>", runpy.__file__):
            trace = trace.tb_next
        sys.excepthook(type(problem), problem.with_traceback(trace), trace)
        code = 1
    try:
        import threading
        threading._shutdown()
    except Exception:
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if not stream.closed:
                stream.flush()
        except Exception:
            code = code or 120
    os._exit(code)


def handle(conn, listener):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    listener.close()
    try:
        fds, cwd, argv, env = receive(conn)
    except OSError:
        os._exit(1)
    child = os.fork()
    if child == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        run_program(cwd, argv, env)
    for fd in fds:
        os.close(fd)
    watch = os.pidfd_open(child)
    while True:
        ready, _, _ = select.select([watch, conn], [], [])
        if watch in ready:
            break
        if conn in ready and not conn.recv(1, socket.MSG_PEEK):
            # The client was killed: so is its program.
            os.kill(child, signal.SIGKILL)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    try:
        conn.sendall(struct.pack("=i", code))
    except OSError:
        pass
    os._exit(0)


def main():
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            handle(conn, listener)
        conn.close()


if __name__ == "__main__":
    main()
`;

export const CLIENT_C = String.raw`/* python3 stand-in for the host gates: hands argv, env, cwd and fds 0-2 to a warm interpreter (the
 * zygote) that forks and runs the program; anything it does not handle execs the real interpreter. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;
#ifndef REAL_PYTHON
#error REAL_PYTHON
#endif

static void fallback(char **argv) {
  execv(REAL_PYTHON, argv);
  perror("exec " REAL_PYTHON);
  _exit(127);
}

static int supported(int argc, char **argv) {
  if (argc < 2) return 0;
  if (strcmp(argv[1], "-c") == 0 || strcmp(argv[1], "-m") == 0) return argc >= 3;
  return argv[1][0] != '-';
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    p += w; n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *path = getenv("TBRL_PYZYGOTE");
  if (!path || !supported(argc, argv)) fallback(argv);
  char cwd[8192];
  if (!getcwd(cwd, sizeof cwd)) fallback(argv);
  size_t size = strlen(cwd) + 1;
  for (int i = 0; i < argc; i++) size += strlen(argv[i]) + 1;
  size += 1;
  for (char **e = environ; *e; e++) size += strlen(*e) + 1;
  char *buf = malloc(size), *p = buf;
  if (!buf) fallback(argv);
  p = stpcpy(p, cwd) + 1;
  for (int i = 0; i < argc; i++) p = stpcpy(p, argv[i]) + 1;
  *p++ = 0;
  for (char **e = environ; *e; e++) p = stpcpy(p, *e) + 1;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  if (s < 0 || strlen(path) >= sizeof addr.sun_path) fallback(argv);
  strcpy(addr.sun_path, path);
  if (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) { close(s); fallback(argv); }
  uint32_t len = (uint32_t)size;
  int fds[3] = { 0, 1, 2 };
  char control[CMSG_SPACE(sizeof fds)];
  memset(control, 0, sizeof control);
  struct iovec iov = { .iov_base = &len, .iov_len = sizeof len };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  /* Nothing has run yet: if the zygote is unreachable, the real interpreter still gives the same result. */
  if (sendmsg(s, &msg, 0) != (ssize_t)sizeof len) { close(s); fallback(argv); }
  if (write_all(s, buf, size) < 0) { close(s); fallback(argv); }
  int32_t status;
  size_t got = 0;
  while (got < sizeof status) {
    ssize_t r = read(s, (char *)&status + got, sizeof status - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { fprintf(stderr, "python zygote: lost the program's exit status\n"); return 255; }
    got += (size_t)r;
  }
  if (status < 0) {
    /* Killed by a signal: die by the same signal so the parent sees what it would have seen. */
    signal(-status, SIG_DFL);
    kill(getpid(), -status);
    return 128 - status;
  }
  return status;
}
`;

async function realInterpreter(python: string): Promise<string | undefined> {
  const r = await runProcess([python, '-c', 'import sys; print(sys.executable)']);
  const path = r.stdout.trim();
  return r.code === 0 && path.startsWith('/') ? path : undefined;
}

/** Compiles the client once per interpreter into a shared cache directory (atomic rename). */
async function compiledClient(real: string): Promise<string | undefined> {
  const key = createHash('sha256').update(CLIENT_C).update(real).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `tbrl-gate-python-${key}`);
  const bin = join(dir, 'python3');
  if (existsSync(bin)) return dir;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, '.build-'));
  try {
    await writeFile(join(work, 'client.c'), CLIENT_C);
    const cc = await runProcess(['cc', '-O2', `-DREAL_PYTHON=${JSON.stringify(real)}`, '-o', join(work, 'python3'), join(work, 'client.c')]);
    if (cc.code !== 0) return undefined;
    await chmod(join(work, 'python3'), 0o755);
    await rename(join(work, 'python3'), bin);
    return dir;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Starts the gate server for `python` (default python3). Without a C compiler or with a server that
 * does not come up, the gates still skip a pyenv-style shim by putting the real interpreter's
 * directory first on PATH (what `pyenv exec` does for the programs it starts anyway).
 */
export async function startGatePython(python = 'python3'): Promise<GatePython> {
  const real = await realInterpreter(python);
  if (!real) return { env: {}, mode: 'direct', close: async () => {} };
  const path = `${dirname(real)}:${process.env.PATH ?? ''}`;
  const direct: GatePython = { env: { PATH: path }, mode: 'direct', close: async () => {} };
  const clientDir = await compiledClient(real).catch(() => undefined);
  if (!clientDir) return direct;
  const home = await mkdtemp(join(tmpdir(), 'tbrl-gate-server-'));
  await writeFile(join(home, 'zygote.py'), ZYGOTE_PY);
  const socket = join(home, 'sock');
  const child: ChildProcess = spawn(real, [join(home, 'zygote.py'), socket, ...PRELOAD], { stdio: ['ignore', 'pipe', 'pipe'] });
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  };
  const ready = await new Promise<boolean>((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve(false), 60_000);
    child.stdout!.on('data', (d: Buffer) => { out += d.toString(); if (out.includes('ready')) { clearTimeout(timer); resolve(true); } });
    child.on('exit', () => { clearTimeout(timer); resolve(false); });
    child.on('error', () => { clearTimeout(timer); resolve(false); });
  });
  if (!ready) {
    await cleanup();
    return direct;
  }
  // The server must not keep Node alive; it dies with this process.
  child.stdout!.resume();
  child.stderr!.resume();
  child.unref();
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  const onExit = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const env = { PATH: `${clientDir}:${path}`, TBRL_PYZYGOTE: socket };
  // The client must run here (a noexec temp directory would break every gate) and reach the server
  // (a program forked from it finds the server's socket module already imported; a cold python3 does not).
  const probe = await runProcess([join(clientDir, 'python3'), '-c', 'import sys; print("socket" in sys.modules, sys.executable)'], { env });
  if (probe.code !== 0 || probe.stdout.trim() !== `True ${real}`) {
    process.removeListener('exit', onExit);
    await cleanup();
    return direct;
  }
  // pytest loads installed plugins through the pytest11 entry points; the runner does not.
  const plugins = await runProcess([join(clientDir, 'python3'), '-c', 'import importlib.metadata as m; print(len(list(m.entry_points(group="pytest11"))))'], { env });
  let verifierRunner: string | undefined;
  if (plugins.code === 0 && plugins.stdout.trim() === '0') {
    verifierRunner = join(home, 'verifier_runner.py');
    await writeFile(verifierRunner, VERIFIER_RUNNER_PY);
  }
  return {
    env,
    mode: 'warm',
    verifierRunner,
    close: async () => {
      process.removeListener('exit', onExit);
      await cleanup();
    },
  };
}
