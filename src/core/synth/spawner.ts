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
 */
export type RunProcess = (argv: string[], options?: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; discardOutput?: boolean }) => Promise<Proc>;

export const SPAWNER_PY = String.raw`"""Starts programs for the host gates: one JSON request per line on stdin, one JSON answer per line on stdout.

One loop, no thread per program: each live program has its output sockets and a pidfd in one selector,
and the loop sleeps until something is readable or the earliest timeout falls due (nothing polls).
"""
import base64
import heapq
import json
import os
import selectors
import socket
import subprocess
import sys
import time


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


def start(request, selector, deadlines):
    ident = request["id"]
    # stdout and stderr on Unix socket pairs, as Node's spawn (libuv) gives a child;
    # discard: both on /dev/null (stdio 'ignore').
    pairs = [] if request.get("discard") else [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2)]
    try:
        child = subprocess.Popen(request["argv"], cwd=request["cwd"], env=request["env"], stdin=subprocess.DEVNULL,
                                 stdout=pairs[0][1].fileno() if pairs else subprocess.DEVNULL,
                                 stderr=pairs[1][1].fileno() if pairs else subprocess.DEVNULL, close_fds=True)
    except (OSError, ValueError, TypeError) as problem:
        for pair in pairs:
            pair[0].close()
            pair[1].close()
        answer({"id": ident, "code": None, "stdout": "", "stderr": "", "error": "spawn %s %s" % (request["argv"][0], problem.strerror or problem)})
        return
    for pair in pairs:
        pair[1].close()
    live = Live(ident, child, len(pairs))
    for index, pair in enumerate(pairs):
        pair[0].setblocking(False)
        selector.register(pair[0], selectors.EVENT_READ, ("out", live, index))
    selector.register(os.pidfd_open(child.pid), selectors.EVENT_READ, ("exit", live, None))
    heapq.heappush(deadlines, (time.monotonic() + request["timeout"], ident, live))


def finish(live):
    if live.exited and live.open == 0:
        code = live.child.returncode
        answer({"id": live.ident, "code": code if code >= 0 else None, "stdout": base64.b64encode(b"".join(live.chunks[0])).decode("ascii"),
                "stderr": base64.b64encode(b"".join(live.chunks[1])).decode("ascii")})


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
                live.child.kill()
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

export interface Spawner { run: RunProcess; close(): void }

interface Pending { resolve: (p: Proc) => void }

/**
 * Starts the helper with the real interpreter `python` (an absolute path: not the gates' python3
 * stand-in, whose programs are forked from the gate server). `fallback` runs whatever the helper
 * cannot: every run once it is gone.
 */
export function startSpawner(python: string, fallback: RunProcess): Spawner {
  let child: ChildProcess | undefined = spawn(python, ['-I', '-S', '-c', SPAWNER_PY], { stdio: ['pipe', 'pipe', 'inherit'] });
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
      const m = JSON.parse(line) as { id: number; code: number | null; stdout: string; stderr: string; error?: string };
      const p = pending.get(m.id);
      if (!p) continue;
      pending.delete(m.id);
      const stderr = Buffer.from(m.stderr, 'base64').toString();
      p.resolve({ code: m.code, stdout: Buffer.from(m.stdout, 'base64').toString(), stderr: m.error ? `${stderr}Error: ${m.error}` : stderr });
    }
  });
  // The helper must not keep Node alive; it ends when its stdin closes (with this process).
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  const run: RunProcess = (argv, options = {}) => {
    if (!child) return fallback(argv, options);
    const id = ++next;
    const request = { id, argv, cwd: options.cwd ?? process.cwd(), env: { ...process.env, ...options.env }, timeout: (options.timeoutMs ?? 120_000) / 1000, ...(options.discardOutput ? { discard: true } : {}) };
    return new Promise<Proc>((resolve) => {
      pending.set(id, { resolve });
      // A pending run keeps Node alive as Node's own spawn would.
      if (pending.size === 1) (child?.stdout as unknown as { ref?: () => void } | undefined)?.ref?.();
      child!.stdin!.write(JSON.stringify(request) + '\n');
    }).finally(() => {
      if (pending.size === 0) (child?.stdout as unknown as { unref?: () => void } | undefined)?.unref?.();
    });
  };
  return {
    run,
    close: () => {
      child?.stdin?.end();
      child?.kill('SIGKILL');
      child = undefined;
    },
  };
}
