import { spawn, type ChildProcess } from 'node:child_process';
import type { Proc } from './host';

/**
 * A process spawner for the host gates (issue #20). Node starts a child with a real fork() of its
 * own address space (libuv on Linux), so each of the ~110 processes a task's gates start copied the
 * gates' page tables and marked every page of the V8 heap copy-on-write; the Node process then took a
 * page fault on each page it wrote until the next spawn did it again (~400k faults per task, a fifth
 * of all the CPU the gates used). This helper is a small python3 that Node starts once: it receives
 * argv, cwd, environment and timeout over a pipe, starts the program with vfork + exec
 * (`subprocess.Popen` does on Linux), collects its stdout and stderr, and answers with the exit
 * status. Node's own memory is no longer forked at all.
 *
 * What a program sees is what Node's spawn gives it: the same argv, cwd and environment (the PATH
 * lookup uses the given environment), stdin on /dev/null, stdout and stderr on socket pairs (as libuv
 * makes them), no other open descriptor, default signal
 * dispositions (Popen's restore_signals resets the two python ignores), killed with SIGKILL at the
 * timeout; a program killed by a signal reports code null, one that cannot be started code null and
 * the error. If the helper cannot start, or exits, runs go back to Node's own spawn.
 *
 * Hand-over (issue #20): most runs the gates start are the gate server's C clients — `python3`
 * (progress.py, the verifier runner) and the `bash` stand-in of shared runs (the TypeScript grader's
 * pipeline runs, mostly answered from a kept run) —, processes whose only work is to hand their cwd,
 * argv, environment and fds 0-2 to the server and wait for the exit status it reports. Given the
 * clients' paths (`clients`), the helper sends the very same request itself when the request's PATH
 * lookup finds one of them and that client would hand it over (its `supported()`; TBRL_PYZYGOTE set):
 * the same bytes (cwd as getcwd() gives it, argv, the environment in order), the same fds (stdin on
 * /dev/null, stdout and stderr on the socket pairs, or all on /dev/null), the status as the client's
 * exit (negative: the signal, code null; none: 255 and the client's message); at the timeout it closes
 * the connection, which the server treats as the client's death (it kills the program). Where the
 * request cannot be sent, or the server answers that nothing ran (run it yourself; for bash also "run
 * it and report", a run not kept yet: the connection is closed before any report, so nothing is kept),
 * the client is started after all and asks again: bash itself only ever runs as the stand-in's child,
 * killed with it. That spares a vfork, an exec, an exit and two wake-ups per program (~100 a task).
 * `direct: false` on a run: always the client.
 */
export type RunProcess = (argv: string[], options?: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; discardOutput?: boolean; direct?: boolean }) => Promise<Proc>;

export const SPAWNER_PY = String.raw`"""Starts programs for the host gates: one JSON request per line on stdin, one JSON answer per line on stdout.

One loop, no thread per program: each live program has its output sockets and a pidfd in one selector,
and the loop sleeps until something is readable or the earliest timeout falls due (nothing polls).
"""
import array
import base64
import heapq
import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import time

# The gate server's clients (gate-server.ts CLIENT_C), {path: "python" | "bash"}: requests they would
# hand to the server are handed over here, without starting them.
CLIENTS = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
# The server's answers meaning "nothing ran here": run it yourself, or (bash) run it and report
# (gate-server.ts RUN_IT_YOURSELF, RUN_AND_REPORT). The client is started then; it asks again.
NOTHING_RAN = (-(1 << 31), -(1 << 31) + 1)


def answer(message):
    sys.stdout.buffer.write((json.dumps(message) + "\n").encode("utf-8"))
    sys.stdout.buffer.flush()


class Live:
    def __init__(self, ident, child, streams):
        self.ident = ident
        self.child = child
        self.open = streams
        self.chunks = {0: [], 1: []}
        self.exited = False
        # Handed over (child None): the connection to the server, the status bytes so far, the exit code.
        self.conn = None
        self.request = None
        self.pairs = []
        self.status = b""
        self.code = None
        self.error = None

    def kill(self, selector):
        if self.child is not None:
            self.child.kill()
            return
        # Closing the connection is the client's death to the server: it kills the program (SIGKILL,
        # as the client's own death by SIGKILL would report).
        drop(self, selector)
        release(self)
        self.exited = True
        self.code = -9
        finish(self)


def release(live):
    """Closes the helper's copies of the handed-over program's stdout and stderr (its own stay open)."""
    for pair in live.pairs:
        pair[1].close()
    live.pairs = []


def drop(live, selector):
    if live.conn is not None:
        selector.unregister(live.conn)
        live.conn.close()
        live.conn = None


def client_mode(request):
    """"python" or "bash" when the request would exec one of the server's clients and that client would
    hand it to the server (CLIENT_C's supported()), else None: the PATH lookup Popen makes, then the
    client's own checks (the bash stand-in: ENTRY INPUT_DIR OUTPUT_DIR with fds 0-2 on /dev/null, in a scope)."""
    argv, env = request["argv"], request["env"]
    if not CLIENTS or not request.get("direct") or not env.get("TBRL_PYZYGOTE") or len(argv) < 2 or not argv[0] or "/" in argv[0]:
        return None
    mode = None
    for folder in os.get_exec_path(env):
        candidate = os.path.join(folder, argv[0])
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            mode = CLIENTS.get(candidate)
            break
    if mode == "python":
        return mode if (len(argv) >= 3 if argv[1] in ("-c", "-m") else not argv[1].startswith("-")) else None
    if mode == "bash" and env.get("TBRL_SHARED_RUNS") and len(argv) == 4 and request.get("discard"):
        return mode if all(a and not a.startswith("-") for a in argv[1:]) else None
    return None


def hand_over(request, mode, fds):
    """Sends the request as the client would (CLIENT_C main); the connection, or None when it cannot
    be sent (nothing has run: the client then runs and does what it does)."""
    try:
        cwd = os.path.realpath(request["cwd"])
        if not os.path.isdir(cwd):
            return None
        items = [mode.encode(), os.fsencode(cwd)] + [os.fsencode(a) for a in request["argv"]]
        body = b"".join(item + b"\0" for item in items) + b"\0"
        body += b"".join(os.fsencode(k) + b"=" + os.fsencode(v) + b"\0" for k, v in request["env"].items())
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    except (OSError, ValueError, TypeError):
        return None
    try:
        conn.connect(request["env"]["TBRL_PYZYGOTE"])
        conn.sendmsg([struct.pack("=I", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        conn.sendall(body)
    except (OSError, ValueError, TypeError):
        conn.close()
        return None
    conn.setblocking(False)
    return conn


def popen(request, pairs):
    return subprocess.Popen(request["argv"], cwd=request["cwd"], env=request["env"], stdin=subprocess.DEVNULL,
                            stdout=pairs[0][1].fileno() if pairs else subprocess.DEVNULL,
                            stderr=pairs[1][1].fileno() if pairs else subprocess.DEVNULL, close_fds=True)


def start(request, selector, deadlines):
    ident = request["id"]
    # stdout and stderr on Unix socket pairs, as Node's spawn (libuv) gives a child;
    # discard: both on /dev/null (stdio 'ignore').
    pairs = [] if request.get("discard") else [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2)]
    conn = None
    mode = "allow" if request.get("allow") else client_mode(request)
    if mode is not None:
        # What Popen gives the client: /dev/null opened read-write for each fd it does not pipe.
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            conn = hand_over(request, mode, [null] + ([pair[1].fileno() for pair in pairs] if pairs else [null, null]))
        finally:
            os.close(null)
    if conn is not None:
        live = Live(ident, None, len(pairs))
        live.conn = conn
        live.request = request
        live.pairs = pairs
        selector.register(conn, selectors.EVENT_READ, ("status", live, None))
    elif mode == "allow":
        # A declaration for the server (GatePython.allowReuse), not a program: nothing to start.
        answer({"id": ident, "code": None, "stdout": "", "stderr": "", "error": "the gate server cannot be reached"})
        return
    else:
        try:
            child = popen(request, pairs)
        except (OSError, ValueError, TypeError) as problem:
            for pair in pairs:
                pair[0].close()
                pair[1].close()
            answer({"id": ident, "code": None, "stdout": "", "stderr": "", "error": "spawn %s %s" % (request["argv"][0], problem.strerror or problem)})
            return
        live = Live(ident, child, len(pairs))
        selector.register(os.pidfd_open(child.pid), selectors.EVENT_READ, ("exit", live, None))
        for pair in pairs:
            pair[1].close()
    for index, pair in enumerate(pairs):
        pair[0].setblocking(False)
        selector.register(pair[0], selectors.EVENT_READ, ("out", live, index))
    heapq.heappush(deadlines, (time.monotonic() + request["timeout"], ident, live))


def server_status(live, selector):
    """The server's answer for a handed-over request: the program's exit status (a bash stand-in's: that
    of the run it kept), or that nothing ran."""
    try:
        data = live.conn.recv(4 - len(live.status))
    except BlockingIOError:
        return
    except OSError:
        data = b""
    live.status += data
    if data and len(live.status) < 4:
        return
    drop(live, selector)
    code = struct.unpack("=i", live.status)[0] if len(live.status) == 4 else None
    if code in NOTHING_RAN and not live.request.get("allow"):
        # Nothing ran (nothing is kept for a connection closed before its report): the client runs
        # after all, on the same fds; it asks again, then runs the program as it would have.
        try:
            live.child = popen(live.request, live.pairs)
        except (OSError, ValueError, TypeError) as problem:
            live.exited = True
            live.error = "spawn %s %s" % (live.request["argv"][0], problem.strerror or problem)
            code = None
        else:
            selector.register(os.pidfd_open(live.child.pid), selectors.EVENT_READ, ("exit", live, None))
        release(live)
        if live.child is not None:
            return
        finish(live)
        return
    release(live)
    if code is None:
        # The server is gone: what the client says and exits with when it loses the exit status.
        if live.pairs:
            live.chunks[1].append(b"python zygote: lost the program's exit status\n")
        code = 255
    live.exited = True
    live.code = code
    finish(live)


def finish(live):
    if live.exited and live.open == 0:
        code = live.child.returncode if live.child is not None else live.code
        message = {"id": live.ident, "code": code if code is not None and code >= 0 else None, "stdout": base64.b64encode(b"".join(live.chunks[0])).decode("ascii"),
                   "stderr": base64.b64encode(b"".join(live.chunks[1])).decode("ascii")}
        if live.error:
            message["error"] = live.error
        if live.child is None and not live.request.get("allow"):
            message["server"] = True
        answer(message)


def main():
    selector = selectors.DefaultSelector()
    stdin = sys.stdin.buffer.fileno()
    selector.register(stdin, selectors.EVENT_READ, ("requests", None, None))
    pending = b""
    deadlines = []
    while True:
        # Kill what is past its timeout (SIGKILL, as Node's spawn timeout here); sleep until the next one.
        now = time.monotonic()
        while deadlines and (deadlines[0][2].exited or deadlines[0][0] <= now):
            _, _, live = heapq.heappop(deadlines)
            if not live.exited:
                live.kill(selector)
        wait = max(0.0, deadlines[0][0] - now) if deadlines else None
        for key, _ in selector.select(wait):
            kind, live, index = key.data
            if kind == "requests":
                data = os.read(stdin, 1 << 16)
                if not data:
                    return
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        start(json.loads(line), selector, deadlines)
            elif kind == "status":
                server_status(live, selector)
            elif kind == "out":
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if data:
                    live.chunks[index].append(data)
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    live.open -= 1
                    finish(live)
            else:
                selector.unregister(key.fileobj)
                os.close(key.fileobj)
                live.child.wait()
                live.exited = True
                finish(live)


if __name__ == "__main__":
    main()
`;

export interface Spawner {
  run: RunProcess;
  /**
   * Declares scripts (their sha256s, hex) to the gate server at `socket` as ones the gates generated
   * (gate-server.ts `allow`); resolves true once the server has them.
   */
  allow(digests: string[], socket: string): Promise<boolean>;
  close(): void;
  /** How many runs so far were handed to the gate server without starting its client (tests, benchmarks). */
  handedOver(): number;
}

/** The gate server's client binaries by path, and the protocol each speaks (gate-server.ts CLIENT_C). */
export type ServerClients = Record<string, 'python' | 'bash'>;

interface Pending { resolve: (p: Proc) => void }

/**
 * Starts the helper with the real interpreter `python` (an absolute path: not the gates' python3
 * stand-in, whose programs are forked from the gate server). `fallback` runs whatever the helper
 * cannot: every run once it is gone. `clients`: the gate server's clients, whose requests the helper
 * hands over itself (above).
 */
export function startSpawner(python: string, fallback: RunProcess, clients?: ServerClients): Spawner {
  let child: ChildProcess | undefined = spawn(python, ['-I', '-S', '-c', SPAWNER_PY, ...(clients ? [JSON.stringify(clients)] : [])], { stdio: ['pipe', 'pipe', 'inherit'] });
  let handedOver = 0;
  const pending = new Map<number, Pending>();
  let next = 0;
  let buffered = '';
  const gone = (why: string) => {
    child = undefined;
    // The runs in flight may or may not have happened: they report a failure (the gate that asked
    // fails loudly) rather than being started a second time.
    for (const [, p] of pending) p.resolve({ code: null, stdout: '', stderr: `the gates' process spawner ${why} while this program ran` });
    pending.clear();
  };
  child.on('error', (err) => gone(`failed (${String(err)})`));
  // 'close', not 'exit': answers still in the pipe when it exits are read first.
  child.on('close', (code, signal) => gone(`exited (${signal ?? code})`));
  child.stdin!.on('error', () => undefined);
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const m = JSON.parse(line) as { id: number; code: number | null; stdout: string; stderr: string; error?: string; server?: boolean };
      const p = pending.get(m.id);
      if (!p) continue;
      pending.delete(m.id);
      if (m.server) handedOver++;
      const stderr = Buffer.from(m.stderr, 'base64').toString();
      p.resolve({ code: m.code, stdout: Buffer.from(m.stdout, 'base64').toString(), stderr: m.error ? `${stderr}Error: ${m.error}` : stderr });
    }
  });
  // The helper must not keep Node alive; it ends when its stdin closes (with this process).
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  const send = (request: Record<string, unknown> & { id: number }): Promise<Proc> =>
    new Promise<Proc>((resolve) => {
      pending.set(request.id, { resolve });
      // A pending run keeps Node alive as Node's own spawn would.
      if (pending.size === 1) (child?.stdout as unknown as { ref?: () => void } | undefined)?.ref?.();
      child!.stdin!.write(JSON.stringify(request) + '\n');
    }).finally(() => {
      if (pending.size === 0) (child?.stdout as unknown as { unref?: () => void } | undefined)?.unref?.();
    });
  const run: RunProcess = (argv, options = {}) => {
    if (!child) return fallback(argv, options);
    return send({ id: ++next, argv, cwd: options.cwd ?? process.cwd(), env: { ...process.env, ...options.env }, timeout: (options.timeoutMs ?? 120_000) / 1000, ...(options.discardOutput ? { discard: true } : {}), ...(clients && options.direct !== false ? { direct: true } : {}) });
  };
  const allow = async (digests: string[], socket: string): Promise<boolean> => {
    if (!child || digests.length === 0) return false;
    // The request travels as a client's would (mode "allow", argv the digests, fds 0-2 on /dev/null).
    const r = await send({ id: ++next, allow: true, argv: digests, cwd: '/', env: { TBRL_PYZYGOTE: socket }, timeout: 10, discard: true });
    return r.code === 0;
  };
  return {
    run,
    allow,
    handedOver: () => handedOver,
    close: () => {
      child?.stdin?.end();
      child?.kill('SIGKILL');
      child = undefined;
    },
  };
}
