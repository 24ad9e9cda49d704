import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, rmSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runProcess } from './host';
import { startSpawner, type RunProcess } from './spawner';
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
  /** Starts a process through the spawner (spawner.ts) on the warm server; absent otherwise (Node's spawn). */
  run?: RunProcess;
  /** How many of the spawner's runs were handed straight to this server, without its client (spawner.ts). */
  handedOver?: () => number;
  /**
   * PATH with the bash stand-in first: with it and TBRL_SHARED_RUNS=<scope> in a program's environment,
   * a `bash ENTRY INPUT_DIR OUTPUT_DIR` run with stdin, stdout and stderr on /dev/null is shared with
   * any earlier run of the same scope on byte-identical inputs (run_plan in the server); absent when
   * the server cannot share runs.
   */
  sharedRunsPath?: string;
  /**
   * Declares scripts the gates generated (the reference pipeline and its near-miss variants, by their
   * bytes): a run of one of them may go to a reused process, as progress.py's does (`allow` in the
   * server). Absent when the server reuses no process.
   */
  allowReuse?: (scripts: string[]) => Promise<boolean>;
  /** Variables for a pytest session: a server that has imported pytest (started on first use); absent when this one has. */
  pytestEnv?: () => Promise<Record<string, string>>;
  close(): Promise<void>;
}

/** Modules a pytest session's server imports once; the gate programs import them again for free. */
const PRELOAD_PYTEST = ['pytest', ...['mark', 'main', 'runner', 'fixtures', 'helpconfig', 'python', 'terminal', 'debugging', 'unittest', 'capture', 'skipping', 'legacypath', 'tmpdir', 'monkeypatch', 'recwarn', 'pastebin', 'assertion.rewrite', 'nose', 'junitxml', 'doctest', 'cacheprovider', 'freeze_support', 'setuponly', 'setupplan', 'stepwise', 'warnings', 'logging', 'reports', 'python_path', 'unraisableexception', 'threadexception', 'faulthandler', 'pytester', 'pytester_assertions', 'raises', 'subtests', 'tracemalloc', 'scope', 'timing'].map((m) => `_pytest.${m}`), 'pdb', 'faulthandler', 'codeop', 'csv', 'decimal', 'json', 'sqlite3', 'struct', 'subprocess', 'tempfile', 'shutil', 'hashlib', 'pathlib', 'functools'];

/**
 * Modules imported on the way into or inside a program rather than by its import statements: runpy's
 * run_path imports pkgutil for every script (~175 copy-on-write faults and an unmarshal per program:
 * about a sixth of a forked program's faults), and datetime.strptime imports _strptime (and calendar)
 * on first use (the reference pipelines of log-forensics and of the UTC-offset fault). Imported here,
 * they cost each program nothing (as with every module in this list, a program finds them in
 * sys.modules before it imports them).
 */
const PRELOAD_LAZY = ['pkgutil', '_strptime'];

/**
 * Modules the gates' own programs import (progress.py, the reference pipeline, the verifier and its
 * runner, the SQLite readers): the default server's. Without pytest it is a third smaller, and every
 * program's fork copies and faults in less of it (~1 ms a program); pytest sessions go to a second
 * server that has imported pytest, started on first use (GatePython.pytestEnv).
 */
const PRELOAD_PROGRAMS = ['_pytest.outcomes', 'inspect', 'threading', 'csv', 'datetime', 'decimal', 'json', 'sqlite3', 'struct', 'subprocess', 'tempfile', 'shutil', 'hashlib', 'pathlib', 'functools', 'resource', 'fcntl', ...PRELOAD_LAZY];

export const ZYGOTE_PY = String.raw`"""Warm python3 for the host gates: imports once, then forks one child per program a client hands over.

Each request (from the C client named python3) carries cwd, argv, the environment and fds 0-2. The
server forks the program's process, and sends back its exit status once it exits (negative: the
signal that killed it). The program runs as python3 SCRIPT, -c CODE or -m MODULE would.
"""
import _imp
import array
import atexit
import builtins
import collections
import gc
import hashlib
import importlib.util
import io
import marshal
import os
import runpy
import select
import selectors
import signal
import socket
import _signal
import stat
import struct
import sys
import types

ORIGINAL_PATH = list(sys.path[1:])

# Compiled code by source bytes, most recently used last (bounded: every task has its own sources).
CODE_CACHE = collections.OrderedDict()
CODE_CACHE_SIZE = 64
# In a program's process: {absolute path: (source bytes, code)} for the .py files on its command line.
PRECOMPILED = {}

PREVIOUS = sys.argv[2:3] == ["--previous"]
# The server's own std streams and argv, referenced here so that a program replacing them does not
# free them (freeing them wrote ~40 pages of the server's memory in every program).
SERVER_STREAMS = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
SERVER_ARGV = sys.argv
# The std streams' encoding: the interpreter's own (a program forked from here made its streams with it).
STREAM_ENCODING = sys.stdout.encoding
# std stream objects made once per profile of the client's fds 0-2 (stream_template), for these file types.
STREAM_TEMPLATES = {}
STREAM_KINDS = (stat.S_IFREG, stat.S_IFCHR, stat.S_IFIFO, stat.S_IFSOCK)
# os.closerange is one close_range(2) call when the interpreter was built with it and the kernel has it
# (5.9); otherwise it would close every number up to the limit one by one, and the child closes the
# server's fds by their objects instead.
try:
    import sysconfig
    CLOSE_RANGE = bool(sysconfig.get_config_var("HAVE_CLOSE_RANGE")) and sys.platform == "linux" and tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (5, 9)
except Exception:
    CLOSE_RANGE = False
FD_LIMIT = os.sysconf("SC_OPEN_MAX") if CLOSE_RANGE else 0

# The real bash for shared pipeline runs (the bash stand-in's requests); none: every bash runs itself.
REAL_BASH = os.environ.pop("TBRL_REAL_BASH", None)
# Shared pipeline runs: {key: (exit status, the output tree's entries, bytes)}, most recently used last.
# A kept run is wanted moments later (the second grader of the same state), and every byte kept here
# is copied into each program's page tables at fork: a few dozen runs, at most RUNS_BYTES.
RUNS = collections.OrderedDict()
RUNS_SIZE = 32
RUNS_BYTES = 32 << 20
RUNS_HELD = [0]
# A tree larger than this is not hashed (its run is not shared).
TREE_LIMIT = 16 << 20
# Answers to the bash stand-in: "nothing ran, exec bash" (the run cannot be shared), and "run bash
# yourself and report its exit status" (the run is kept once the report arrives).
RUN_IT_YOURSELF = -(1 << 31)
RUN_AND_REPORT = -(1 << 31) + 1

for name in sys.argv[3 if PREVIOUS else 2:]:
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
    mode, cwd = parts[0], parts[1]
    end = parts.index(b"", 2)
    argv = [os.fsdecode(a) for a in parts[2:end]]
    env = {}
    for item in parts[end + 1:]:
        if b"=" in item:
            key, _, value = item.partition(b"=")
            env[key] = value
    return list(fds), os.fsdecode(cwd), argv, env, mode


def new_std_streams():
    """Fresh sys.stdin/stdout/stderr objects on fds 0-2, as the interpreter makes them at start-up."""
    encoding = STREAM_ENCODING
    return (io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=encoding,
                             line_buffering=os.isatty(1)),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding=encoding,
                             errors="backslashreplace", line_buffering=True))


def fd_profile(fd):
    """What making a std stream on fd reads from it: file type, block size, seekability, tty; None if it
    is seekable but not at offset 0 (the buffered object records the offset: made per program then)."""
    try:
        info = os.fstat(fd)
        try:
            offset = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError:
            offset = None
        if offset not in (None, 0):
            return None
        return (stat.S_IFMT(info.st_mode), info.st_blksize, offset, os.isatty(fd))
    except OSError:
        return None


def stream_template(fds):
    """sys.stdin/stdout/stderr made once (in the server) for clients whose fds 0-2 look alike, or None.

    Making the three stream objects in every program wrote ~65 pages of the server's memory there
    (codec lookups, encoder and decoder objects, allocations), each a copy-on-write fault. Objects
    made here on the client's fds (dup'ed onto the server's 0-2 for a moment) hold the same state a
    program's own would (they record only the fd numbers and what fd_profile reads); the server
    never uses them, so every program gets them untouched in its copy of memory.
    """
    key = tuple(fd_profile(fd) for fd in fds)
    if None in key or any(kind not in STREAM_KINDS for kind, _, _, _ in key):
        return None
    made = STREAM_TEMPLATES.get(key)
    if made is None:
        saved = []
        try:
            for target in range(3):
                saved.append(os.dup(target))
        except OSError:
            for fd in saved:
                os.close(fd)
            return None
        try:
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            made = new_std_streams()
        except Exception:
            # The program makes its own (and fails there, as before).
            return None
        finally:
            for target, fd in enumerate(saved):
                os.dup2(fd, target)
                os.close(fd)
        if len(STREAM_TEMPLATES) < 16:
            STREAM_TEMPLATES[key] = made
    return made


def std_streams(template=None):
    sys.stdin, sys.stdout, sys.stderr = template if template is not None else new_std_streams()
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def environ_plan(env):
    """How the program's process turns the server's environment into env, in env's order: (names to
    unset, (name, value) pairs to set), or None to replace every variable.

    A request's variables are mostly the server's own (both come from the gates' Node process): when
    the shared ones are in the same order and the others come last, only the differences need applying.
    Clearing and refilling every variable wrote ~100 pages of the server's memory in each program
    (unsetenv/setenv, the dict), each a copy-on-write fault; the comparison runs here, before the fork,
    because comparing in the program touched every variable's object (its reference count) again.
    """
    data = os.environb._data
    common = [key for key in env if key in data]
    if [key for key in data if key in env] != common or list(env)[:len(common)] != common:
        return None
    return [key for key in data if key not in env], [(key, value) for key, value in env.items() if data.get(key) != value]


def set_environ(env, plan):
    """os.environ (and the C environment) becomes env, in env's order (plan: environ_plan's answer)."""
    if plan is None:
        os.environb.clear()
        os.environb.update(env)
        return
    removed, changed = plan
    for key in removed:
        del os.environb[key]
    for key, value in changed:
        os.environb[key] = value


def precompile(cwd, argv):
    """Code for the .py files a request names (the script and any further *.py argument), from the cache.

    Compiling the script was a tenth of the gates' CPU: the same progress.py, reference pipeline and
    verifier are compiled again by every program that runs them (CPython caches no bytecode for a
    script run as __main__). The code is what compile(source, path, "exec") gives; the program's
    process uses it only if the file still holds those bytes (cached_code).
    """
    names = [argv[1]] + [a for a in argv[2:] if a.endswith(".py")] if argv[1] not in ("-c", "-m") else []
    found = {}
    for name in names:
        path = os.path.normpath(os.path.join(cwd, name))
        try:
            if os.stat(path).st_size > 1 << 20:
                continue
            with io.open_code(path) as handle:
                data = handle.read()
        except OSError:
            continue
        if data[:4] == importlib.util.MAGIC_NUMBER:
            continue
        code = code_of(data, path)
        if code is not None:
            found[path] = (data, code)
    return found


def code_of(data, path, code=None):
    """compile(data, path, "exec") from the cache (code: given by the server, put there first); None if
    it does not compile (the program's own compile raises it, with its own traceback)."""
    if code is None:
        code = CODE_CACHE.get(data)
    if code is None:
        try:
            code = compile(data, path, "exec", dont_inherit=True)
        except Exception:
            return None
    CODE_CACHE[data] = code
    CODE_CACHE.move_to_end(data)
    if len(CODE_CACHE) > CODE_CACHE_SIZE:
        CODE_CACHE.popitem(last=False)
    return code


def cached_code(path, filename=None):
    """compile(<the file's bytes>, filename or path, "exec") from the server's cache, or None (compile it yourself)."""
    entry = PRECOMPILED.get(os.path.abspath(path))
    if entry is None:
        return None
    try:
        with io.open_code(os.path.abspath(path)) as handle:
            if handle.read() != entry[0]:
                return None
    except OSError:
        return None
    code = entry[1]
    # compile() records the name it was given; the cache's code has the path it was first compiled at.
    _imp._fix_co_filename(code, filename if filename is not None else path)
    return code


_get_code_from_file = runpy._get_code_from_file


def get_code_from_file(run_name, fname):
    """runpy.run_path's reader: the cached code when the file still holds the cached source (not a .pyc)."""
    code = cached_code(os.fsdecode(fname), fname) if isinstance(fname, str) else None
    return (code, fname) if code is not None else _get_code_from_file(run_name, fname)


def script_path0(cwd, argv):
    """sys.path[0] for a request that runs a script: the directory of the script's real path."""
    if argv[1] in ("-c", "-m"):
        return None
    return os.path.dirname(os.path.realpath(os.path.join(cwd, argv[1])))


def execute(cwd, argv, env, template=None, plan=None, path0=None):
    """Runs the program in this process and returns its exit status (before the interpreter's shutdown).
    plan and path0: environ_plan's answer and the script's sys.path[0], worked out by the server before
    the fork; None: the process works them out itself."""
    os.chdir(cwd)
    set_environ(env, plan)
    std_streams(template)
    mode, target, rest = (argv[1], argv[2], argv[3:]) if argv[1] in ("-c", "-m") else (None, argv[1], argv[2:])
    if PRECOMPILED:
        runpy._get_code_from_file = get_code_from_file
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
            sys.path[:] = [path0 if path0 is not None else os.path.dirname(os.path.realpath(target))] + ORIGINAL_PATH
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
    return code


def flush_streams(code):
    for stream in (sys.stdout, sys.stderr):
        try:
            if not stream.closed:
                stream.flush()
        except Exception:
            code = code or 120
    return code


def run_program(cwd, argv, env, template=None, plan=None, path0=None):
    """Runs the program in this (forked) process and exits with its status (never returns)."""
    code = execute(cwd, argv, env, template, plan, path0)
    shut_down()
    os._exit(flush_streams(code))


def shut_down():
    """What the interpreter does at exit before flushing the streams: threading's shutdown (its atexit
    callbacks, joining non-daemon threads), then the atexit callbacks (none registered: nothing to run)."""
    try:
        import threading
        threading._shutdown()
    except Exception:
        pass
    if atexit._ncallbacks():
        atexit._run_exitfuncs()


def run_on(fds, cwd, argv, env, template=None, fast=True, plan=None, path0=None):
    """In a forked child: the client's three fds become 0-2, then the program runs (never returns).
    fast=False: as before the copy-on-write savings (the previous loop's baseline)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    if CLOSE_RANGE and fast:
        # Every other fd is the server's (listener, selector, clients, pidfds): one close_range call,
        # without touching their Python objects (closing those wrote pages of the server's memory).
        os.closerange(3, FD_LIMIT)
    else:
        for fd in fds:
            if fd > 2:
                os.close(fd)
    run_program(cwd, argv, env, template, plan, path0)


# Reused processes (issue #20): the gates' own programs — progress.py and the verifier runner, ~64
# runs a task — pay ~1,000 copy-on-write faults each in a freshly forked process (~5 us each here), a
# fork and an exit; a second run in the same process pays ~40. A request whose environment carries
# TBRL_GATE_REUSE=<sha256 of its script's bytes> (the gates set it only for those programs, whose code
# they generate) may go to a process that has run the same script before and came out of it clean
# (reusable()): the variable is removed first, so the program sees the environment it would see
# without it.
REUSE_VARIABLE = b"TBRL_GATE_REUSE"
# Runs per process at most, and idle processes kept at most (least recently used killed first). Any idle
# process takes any declared script (one that last ran the same script first): 64 runs and one pool, where
# 16 runs and a pool per script forked ~21 processes a task (each near-miss variant its own), now ~4.
REUSE_RUNS = 64
REUSE_IDLE = 8
# Scripts the gates generated themselves and vouch for (sha256 hex of their bytes, an "allow" request):
# the reference pipeline and its near-miss variants, run through the task's own entry point (bash
# pipeline.sh execs python3 ref_pipeline.py), so no variable can mark the request. A request running
# one of these scripts may go to a reused process as if it carried TBRL_GATE_REUSE (most recent kept).
GENERATED = collections.OrderedDict()
GENERATED_SIZE = 256
CHANNEL_FD = 512
# Server side: {pid: {"key", "ctl" (socket to the process), "watch" (pidfd)}}; idle ones, oldest first.
WORKERS = {}
IDLE = collections.OrderedDict()
# What a fresh process starts with, compared after every run in a reused process (process_state()).
SNAPSHOT = {}


def generated_script(cwd, argv, precompiled):
    """The sha256 (hex) of the request's script when the gates declared it one of theirs, else None."""
    if not GENERATED or argv[1] in ("-c", "-m"):
        return None
    entry = precompiled.get(os.path.normpath(os.path.join(cwd, argv[1])))
    if entry is None:
        return None
    digest = hashlib.sha256(entry[0]).hexdigest().encode()
    return digest if digest in GENERATED else None


def allow_scripts(digests):
    for digest in digests:
        GENERATED[os.fsencode(digest)] = True
        GENERATED.move_to_end(os.fsencode(digest))
    while len(GENERATED) > GENERATED_SIZE:
        GENERATED.popitem(last=False)


def reuse_key(declared, cwd, argv, precompiled):
    """A request's reuse key (its script's sha256, hex), or None: it declared that sha256 and its script
    holds exactly those bytes."""
    if declared is None or not CLOSE_RANGE or DICT_VERSION is None or argv[1] in ("-c", "-m"):
        return None
    entry = precompiled.get(os.path.normpath(os.path.join(cwd, argv[1])))
    if entry is None or hashlib.sha256(entry[0]).hexdigest().encode() != declared:
        return None
    return declared


# Module globals a run in this process rebinds by design, put back before the next (execute, reusable).
RESET_BY_SERVER = {"sys": {"argv", "stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__", "dont_write_bytecode"},
                   "runpy": {"_get_code_from_file"}, "tempfile": {"tempdir", "_name_sequence"}}


def dict_versions():
    """ma_version_tag of a dict (CPython 3.11: changed by every insert, update or delete), or None where
    this interpreter has no such field (then no process is reused)."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return None
    try:
        import ctypes
        def version(namespace):
            return ctypes.c_uint64.from_address(id(namespace) + 24).value
        probe = {}
        before = version(probe)
        probe["x"] = 1
        middle = version(probe)
        probe["x"] = 2
        return version if before != middle != version(probe) else None
    except Exception:
        return None


DICT_VERSION = dict_versions()


def c_environ_reader():
    """A function giving the C library's environment (environ: "NAME=value" entries, in order), or None."""
    try:
        import ctypes
        pointer = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    except Exception:
        return None

    def read():
        entries = []
        index = 0
        while True:
            entry = pointer[index]
            if entry is None:
                return entries
            entries.append(entry)
            index += 1
    return read


C_ENVIRON = c_environ_reader()


def DICT_VIEW(namespace):
    """The version field of a dict as a ctypes view (reads it with .value while the dict lives; the
    snapshot keeps every namespace it views alive)."""
    import ctypes
    return ctypes.c_uint64.from_address(id(namespace) + 24) if DICT_VERSION is not None else None


def signal_handlers():
    """Every signal's handler as _signal.getsignal gives it (signal.getsignal's enum conversion cost
    ~0.1 ms a call of reusable(); the raw value is the same object, or the same small int, each time)."""
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[int(number)] = _signal.getsignal(number)
        except (OSError, ValueError):
            pass
    return handlers


def settings():
    """The process-wide settings a program can change, as values that compare equal when unchanged:
    taken in the server, compared after each reused run (signal handlers apart: by identity)."""
    import csv
    import decimal
    import warnings
    mask = os.umask(0)
    os.umask(mask)
    return {
        "sigmask": signal.pthread_sigmask(signal.SIG_BLOCK, []), "umask": mask,
        "hooks": (sys.excepthook, sys.displayhook, sys.unraisablehook, sys.breakpointhook),
        "lists": (list(sys.meta_path), list(sys.path_hooks), list(warnings.filters)),
        "limits": (sys.getrecursionlimit(), sys.getswitchinterval(), sys.getdefaultencoding(), csv.field_size_limit(), tuple(csv.list_dialects()),
                   gc.isenabled(), gc.get_threshold(), gc.get_debug()),
        "rlimits": rlimits(), "decimal_defaults": (repr(decimal.DefaultContext), repr(decimal.BasicContext), repr(decimal.ExtendedContext)),
    }


def process_state():
    """The process-wide state a program can change and a later program would see (taken in the server)."""
    import decimal
    import random
    import tempfile
    return {
        "modules": dict(sys.modules), "builtins": dict(builtins.__dict__), "signals": signal_handlers(), "settings": settings(),
        "decimal": decimal.getcontext().copy(),
        "path_importer_cache": dict(sys.path_importer_cache), "dont_write_bytecode": sys.dont_write_bytecode,
        "tempdir": tempfile.tempdir, "random": random,
        # Callbacks the interpreter's start-up registered (site's .pth files): they run when the process ends.
        "atexit": atexit._ncallbacks(),
        # Every module's namespace (its dict's version and a copy): a module global rebound by a run is found.
        # (With a view of each version field, read once per check: made per read, it was a third of the check.)
        "namespaces": {name: (module.__dict__, DICT_VERSION(module.__dict__), dict(module.__dict__), DICT_VIEW(module.__dict__))
                       for name, module in sys.modules.items()
                       if name not in ("__main__", "_tbrl_gate_server") and isinstance(getattr(module, "__dict__", None), dict)},
        "name_sequence": tempfile._name_sequence,
    }


RLIMITS = []


def rlimits():
    import resource
    if not RLIMITS:
        RLIMITS.extend(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))
    return [resource.getrlimit(limit) for limit in RLIMITS]


def reusable(ctl, allowed):
    """After a run in a reused process: whether the next run would find the process as a fresh one (else
    it exits as every process did). What a fresh process resets by itself is put back (bytecode flag,
    importer cache, tempfile's directory, the decimal context, the random seed); anything else changed —
    a thread or atexit callback left, a module imported or replaced (but the verifier the runner imports,
    allowed, which is dropped), an fd left open, a signal handler or mask, the umask, a hook, the
    recursion limit, warnings filters, csv or gc settings, a builtin — and the process is not reused."""
    import decimal
    import tempfile
    import threading
    state = SNAPSHOT
    main_thread = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main_thread and not thread.daemon:
            thread.join()
    if len(threading.enumerate()) != 1 or threading._threading_atexits or atexit._ncallbacks() != state["atexit"]:
        return False
    modules = state["modules"]
    for name, module in list(sys.modules.items()):
        if modules.get(name) is not module:
            if name in modules or getattr(module, "__file__", None) not in allowed:
                return False
            del sys.modules[name]
    # (The builtins are a module namespace like the others: a name added, removed or rebound there is
    # found by the namespace check below.)
    if len(sys.modules) != len(modules):
        return False
    getsignal = _signal.getsignal
    for number, handler in state["signals"].items():
        if getsignal(number) is not handler:
            return False
    if settings() != state["settings"] or sys.gettrace() is not None or sys.getprofile() is not None:
        return False
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != ctl:
            try:
                os.fstat(fd)
            except OSError:
                continue  # listdir's own, closed by now
            return False
    # The C environment must be os.environ's, entry for entry and in order (os.putenv, os.unsetenv or a C
    # library's setenv change it alone): the next run's environment is set by its differences from it.
    if C_ENVIRON is not None and C_ENVIRON() != [key + b"=" + value for key, value in os.environb._data.items()]:
        return False
    decimal.setcontext(state["decimal"].copy())
    sys.dont_write_bytecode = state["dont_write_bytecode"]
    sys.path_importer_cache.clear()
    sys.path_importer_cache.update(state["path_importer_cache"])
    tempfile.tempdir = state["tempdir"]
    tempfile._name_sequence = state["name_sequence"]
    namespaces = state["namespaces"]
    changed = [name for name, (_, version, _, view) in namespaces.items() if view.value != version]
    for name in changed:
        namespace, _, copy, view = namespaces[name]
        skip = RESET_BY_SERVER.get(name, ())
        if namespace.keys() != copy.keys() or any(namespace[key] is not value for key, value in copy.items() if key not in skip):
            return False
        namespaces[name] = (namespace, view.value, copy, view)
    # A fresh process reseeds after the fork; and what the run left unreachable is never collected
    # (a fresh process ends in os._exit, so no finalizer of a leftover cycle runs there either).
    state["random"].seed()
    gc.freeze()
    return True


def receive_request(ctl):
    """The next request for a reused process (marshal'ed by give_request), or None when the server is gone."""
    fds = array.array("i")
    try:
        head, ancillary, _, _ = ctl.recvmsg(4, socket.CMSG_SPACE(3 * fds.itemsize))
    except OSError:
        return None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(head) != 4 or len(fds) != 3:
        return None
    (size,) = struct.unpack("=I", head)
    body = bytearray()
    while len(body) < size:
        chunk = ctl.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    cwd, argv, env, compiled = marshal.loads(bytes(body))
    # The server's precompile() of this request (as a forked process gets it): the sources it read, with
    # the code when this process's cache may lack it (compiled after its fork).
    found = {}
    for path, data, code in compiled:
        code = code_of(data, path, code)
        if code is not None:
            found[path] = (data, code)
    return list(fds), cwd, argv, env, found


def give_request(ctl, fds, cwd, argv, env, compiled=()):
    """Hands a request to an idle reused process; False if it is gone. compiled: the request's precompile()
    as (path, source bytes, code or None) — the code only where the process's copy of the code cache lacks
    it (marshal writes a code object as a .pyc holds it: loading it back costs a tenth of compiling the
    source again, which the process did for every script the server compiled after its fork, ~17 compiles
    a task once processes ran more than one script); the sources spare it reading the files again."""
    body = marshal.dumps((cwd, argv, env, list(compiled)))
    try:
        ctl.settimeout(1)
        ctl.sendmsg([struct.pack("=I", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        ctl.sendall(body)
        ctl.settimeout(None)
        return True
    except OSError:
        return False


def reused_process(ctl, fds, cwd, argv, env, template, plan, path0, allowed):
    """In a forked child: runs the request, then, while each run leaves it clean, reports the status on
    ctl and runs the next request the server hands it; otherwise ends as run_program does."""
    global PRECOMPILED
    # The channel sits above the fds a program opens (close-on-exec: no child of the program inherits it).
    import fcntl
    high = fcntl.fcntl(ctl, fcntl.F_DUPFD_CLOEXEC, CHANNEL_FD)
    os.close(ctl)
    ctl = high
    channel = socket.socket(fileno=ctl)
    # A fresh process is the server after the fork: the fork's own handlers rebind a few globals
    # (threading's locks), so those namespaces are compared with what they hold now.
    namespaces = SNAPSHOT["namespaces"]
    for name, (namespace, version, _, view) in list(namespaces.items()):
        if view.value != version:
            namespaces[name] = (namespace, view.value, dict(namespace), view)
    runs = 0
    while True:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, ctl)
        os.closerange(ctl + 1, FD_LIMIT)
        code = execute(cwd, argv, env, template, plan, path0)
        runs += 1
        if runs >= REUSE_RUNS or not reusable(ctl, allowed):
            shut_down()
            os._exit(flush_streams(code))
        code = flush_streams(code)
        # The client's fds are let go before the status is reported (as at a process's exit): a reader
        # of the program's stdout sees its end.
        null = os.open(os.devnull, os.O_RDWR)
        for target in range(3):
            os.dup2(null, target)
        os.close(null)
        try:
            channel.sendall(struct.pack("=i", code))
        except OSError:
            os._exit(0)
        request = receive_request(channel)
        if request is None:
            os._exit(0)
        fds, cwd, argv, env, PRECOMPILED = request
        allowed = {path for path in PRECOMPILED if path != os.path.normpath(os.path.join(cwd, argv[1]))}
        template = path0 = None
        # The environment's differences only (what the server works out for a fork): the process's
        # environment is exactly os.environ here, C level included (reusable checked), so this gives the
        # variables, values and order that replacing every variable gives (that cost ~0.5 ms a run).
        plan = environ_plan(env) if C_ENVIRON is not None else None


def read_all(fd, size):
    """The rest of a regular file whose size was size: one read when it has not grown (a short read of
    a regular file is its end)."""
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    chunks = [data]
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def entry_name(entry):
    return entry.name


def walk_tree(root, keep):
    """The tree under root as (relative path, kind, mode, content or link) in a fixed order; None if it holds
    anything but directories, regular files and symlinks, or more than TREE_LIMIT bytes. keep=False: file
    contents as their sha256. (scandir's entry types spare an lstat per file; paths are joined as bytes:
    a run's key hashes its entry and input trees, twice for a run that is kept.)"""
    found = []
    add = found.append
    total = 0
    pending = [b""]
    imode = stat.S_IMODE
    isreg = stat.S_ISREG
    sha256 = hashlib.sha256
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(root + b"/" + rel if rel else root) as listing:
                entries = sorted(listing, key=entry_name)
        except OSError:
            return None
        below = []
        for entry in entries:
            sub = rel + b"/" + entry.name if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    add((sub, b"d", imode(entry.stat(follow_symlinks=False).st_mode), b""))
                    below.append(sub)
                elif entry.is_symlink():
                    add((sub, b"l", 0, os.readlink(entry.path)))
                elif entry.is_file(follow_symlinks=False):
                    fd = os.open(entry.path, flags)
                    try:
                        info = os.fstat(fd)
                        if not isreg(info.st_mode) or total + info.st_size > TREE_LIMIT:
                            return None
                        data = read_all(fd, info.st_size)
                    finally:
                        os.close(fd)
                    total += len(data)
                    if total > TREE_LIMIT:
                        return None
                    add((sub, b"f", imode(info.st_mode), data if keep else sha256(data).digest()))
                else:
                    return None
            except OSError:
                return None
        pending.extend(reversed(below))
    return found


def tree_digest(root):
    entries = walk_tree(root, keep=False)
    if entries is None:
        return None
    digest = hashlib.sha256()
    for rel, kind, mode, content in entries:
        digest.update(struct.pack("=cIII", kind, mode, len(rel), len(content)) + rel + content)
    return digest.digest()


def inside(path, other):
    return path == other or path.startswith(other.rstrip(b"/") + b"/")


def run_plan(cwd, argv, env):
    """Whether a "bash ENTRY INPUT_DIR OUTPUT_DIR" run can be shared, and its key.

    Its result is taken to be a function of the bytes of the entry's directory tree, of the input tree and
    of the environment (not of paths, the working directory, the time or other files): true of every
    pipeline the gates run (the task's reference and its probes). The key holds all three; the output
    directory must be empty. None: run it as it is, without sharing.
    """
    if REAL_BASH is None or len(argv) != 4:
        return None
    base = os.fsencode(cwd)
    entry, source, target = (os.path.realpath(os.path.join(base, os.fsencode(a))) for a in argv[1:])
    try:
        if not stat.S_ISREG(os.lstat(os.path.join(base, os.fsencode(argv[1]))).st_mode):
            return None
        if not os.path.isdir(source) or not os.path.isdir(target) or os.listdir(target):
            return None
    except OSError:
        return None
    app = os.path.dirname(entry)
    for one, two in ((app, source), (app, target), (source, target)):
        if inside(one, two) or inside(two, one):
            return None
    app_digest = tree_digest(app)
    source_digest = tree_digest(source)
    if app_digest is None or source_digest is None:
        return None
    key = hashlib.sha256(b"tbrl-shared-run-1\0" + os.fsencode(REAL_BASH) + b"\0" + os.path.basename(entry) + b"\0" + app_digest + source_digest)
    for name in sorted(env):
        key.update(struct.pack("=II", len(name), len(env[name])) + name + env[name])
    given = [os.path.abspath(os.path.join(base, os.fsencode(a))) for a in argv[1:]]
    return {"key": key.digest(), "app": app, "source": source, "target": target, "cwd": base, "given": given,
            "app_digest": app_digest, "source_digest": source_digest}


def record_run(plan, code):
    """Keeps a finished run for its key: only a normal exit that changed neither the entry's tree nor the
    input tree, and whose output names none of the run's paths (the next run has other paths)."""
    if code < 0 or tree_digest(plan["app"]) != plan["app_digest"] or tree_digest(plan["source"]) != plan["source_digest"]:
        return
    entries = walk_tree(plan["target"], keep=True)
    if entries is None:
        return
    paths = [plan[k] for k in ("app", "source", "target", "cwd")] + plan["given"]
    for _, kind, _, content in entries:
        if kind != b"d" and any(p in content for p in paths):
            return
    size = sum(len(rel) + len(content) for rel, _, _, content in entries)
    if size > RUNS_BYTES:
        return
    old = RUNS.pop(plan["key"], None)
    if old is not None:
        RUNS_HELD[0] -= old[2]
    RUNS[plan["key"]] = (code, entries, size)
    RUNS_HELD[0] += size
    while len(RUNS) > RUNS_SIZE or RUNS_HELD[0] > RUNS_BYTES:
        RUNS_HELD[0] -= RUNS.popitem(last=False)[1][2]


def replay_run(plan):
    """Writes a kept run's output tree into the (empty) output directory; its exit status, or None."""
    kept = RUNS.get(plan["key"])
    if kept is None:
        return None
    RUNS.move_to_end(plan["key"])
    code, entries, _ = kept
    target = plan["target"]
    for rel, kind, mode, content in entries:
        path = os.path.join(target, rel)
        if kind == b"d":
            os.mkdir(path)
        elif kind == b"f":
            with open(path, "wb") as handle:
                handle.write(content)
            os.chmod(path, mode)
        else:
            os.symlink(content, path)
    for rel, kind, mode, _ in reversed(entries):
        if kind == b"d":
            os.chmod(os.path.join(target, rel), mode)
    return code


def answer(conn, code):
    try:
        conn.settimeout(1)
        conn.sendall(struct.pack("=i", code))
    except OSError:
        pass
    conn.close()


def serve(listener):
    """One loop, no handler process: forks each program straight from the server and reports its exit.

    Each live program has its client's connection (EOF there: the client was killed, so is the
    program) and a pidfd (readable once it has exited). A handler process per program, as before,
    cost a second fork of this interpreter and a scheduling round trip for every program.
    """
    global PRECOMPILED
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    live = {}
    while True:
        for key, _ in selector.select():
            if key.data is None:
                conn, _ = listener.accept()
                try:
                    conn.settimeout(10)
                    fds, cwd, argv, env, mode = receive(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                plan = None
                if mode == b"allow":
                    # The gates declare scripts they generated (argv: their sha256s); nothing runs.
                    for fd in fds:
                        os.close(fd)
                    allow_scripts(argv)
                    answer(conn, 0)
                    continue
                if mode == b"bash":
                    # The bash stand-in: a run kept for the same key is written into the output
                    # directory; when the run cannot be shared, the stand-in execs bash itself.
                    plan = run_plan(cwd, argv, env)
                    code = None
                    if plan is not None:
                        try:
                            code = replay_run(plan)
                        except OSError:
                            code = None
                    if code is not None or plan is None:
                        for fd in fds:
                            os.close(fd)
                        answer(conn, RUN_IT_YOURSELF if code is None else code)
                        continue
                    # A miss: the stand-in runs bash as its own child (as progress.py's bash was) and
                    # reports its exit status; the run is kept before the stand-in is answered.
                    for fd in fds:
                        os.close(fd)
                    try:
                        conn.settimeout(1)
                        conn.sendall(struct.pack("=i", RUN_AND_REPORT))
                        conn.settimeout(None)
                    except OSError:
                        conn.close()
                        continue
                    selector.register(conn, selectors.EVENT_READ, ("report", conn, plan))
                    continue
                declared = env.pop(REUSE_VARIABLE, None)
                precompiled = precompile(cwd, argv)
                if declared is None:
                    declared = generated_script(cwd, argv, precompiled)
                reuse = reuse_key(declared, cwd, argv, precompiled)
                if reuse is not None:
                    # One that last ran the same script first (its pages are warm for it), else any: every
                    # declared script is the gates' own, and reusable() checked the process after each run
                    # whatever ran there, so which script ran before does not matter.
                    idle = next((pid for pid in reversed(IDLE) if IDLE[pid] == reuse), None)
                    if idle is None and IDLE:
                        idle = next(reversed(IDLE))
                    if idle is not None:
                        del IDLE[idle]
                        worker = WORKERS[idle]
                        worker["key"] = reuse
                        known = worker["known"]
                        compiled = [(path, data, None if data in known else code) for path, (data, code) in precompiled.items()]
                        if give_request(worker["ctl"], fds, cwd, argv, env, compiled):
                            known.update(data for _, data, _ in compiled)
                            for fd in fds:
                                os.close(fd)
                            live[idle] = (conn, worker["watch"])
                            selector.register(worker["ctl"], selectors.EVENT_READ, ("done", idle))
                            selector.register(conn, selectors.EVENT_READ, ("client", idle))
                            continue
                        os.kill(idle, signal.SIGKILL)
                template = stream_template(fds)
                plan = environ_plan(env)
                try:
                    path0 = script_path0(cwd, argv)
                except (OSError, ValueError):
                    path0 = None
                if reuse is not None:
                    ctl, ctl_child = socket.socketpair()
                child = os.fork()
                if child == 0:
                    # Rebinding writes one slot of this module's dict; update() wrote the dict's pages.
                    PRECOMPILED = precompiled
                    if reuse is not None:
                        script = os.path.normpath(os.path.join(cwd, argv[1]))
                        reused_process(ctl_child.fileno(), fds, cwd, argv, env, template, plan, path0, {path for path in precompiled if path != script})
                    # The program keeps fds 0-2 only: none of the server's sockets, pidfds or selector.
                    if not CLOSE_RANGE:
                        selector.close()
                        listener.close()
                        conn.close()
                        for other, watch in live.values():
                            other.close()
                            os.close(watch)
                    run_on(fds, cwd, argv, env, template, plan=plan, path0=path0)
                for fd in fds:
                    os.close(fd)
                watch = os.pidfd_open(child)
                if reuse is not None:
                    ctl_child.close()
                    # known: the sources whose code its cache holds (the server's cache when it forked).
                    WORKERS[child] = {"key": reuse, "ctl": ctl, "watch": watch, "known": set(CODE_CACHE)}
                    selector.register(ctl, selectors.EVENT_READ, ("done", child))
                live[child] = (conn, watch)
                selector.register(watch, selectors.EVENT_READ, ("exited", child))
                selector.register(conn, selectors.EVENT_READ, ("client", child))
            elif key.data[0] == "report":
                _, conn, plan = key.data
                selector.unregister(conn)
                try:
                    conn.settimeout(10)
                    head = conn.recv(4, socket.MSG_WAITALL)
                except OSError:
                    head = b""
                if len(head) == 4:
                    record_run(plan, struct.unpack("=i", head)[0])
                    answer(conn, 0)
                else:
                    # The stand-in died before its run finished (killed at a timeout): nothing is kept.
                    conn.close()
            elif key.data[0] == "done":
                # A reused process finished a run and is clean: its status goes to the client, and it
                # waits for the next request of its script.
                child = key.data[1]
                worker = WORKERS.get(child)
                if worker is None or child not in live:
                    continue  # it ended in this round already (its pidfd was read first)
                selector.unregister(worker["ctl"])
                try:
                    head = worker["ctl"].recv(4, socket.MSG_WAITALL)
                except OSError:
                    head = b""
                if len(head) != 4:
                    continue  # it ended: its pidfd reports the status
                conn, _ = live.pop(child)
                try:
                    selector.unregister(conn)
                except KeyError:
                    pass
                answer(conn, struct.unpack("=i", head)[0])
                IDLE[child] = worker["key"]
                while len(IDLE) > REUSE_IDLE:
                    os.kill(IDLE.popitem(last=False)[0], signal.SIGKILL)
            elif key.data[0] == "client":
                child = key.data[1]
                if child not in live:
                    continue  # answered in this round already
                conn = live[child][0]
                try:
                    gone = not conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    # The client was killed: so is its program.
                    selector.unregister(conn)
                    os.kill(child, signal.SIGKILL)
            else:
                child = key.data[1]
                worker = WORKERS.pop(child, None)
                if worker is not None:
                    IDLE.pop(child, None)
                    try:
                        selector.unregister(worker["ctl"])
                    except KeyError:
                        pass
                    worker["ctl"].close()
                    watch = worker["watch"]
                entry = live.pop(child, None)
                if entry is not None:
                    conn, watch = entry
                    try:
                        selector.unregister(conn)
                    except KeyError:
                        pass
                selector.unregister(watch)
                os.close(watch)
                if entry is None:
                    # An idle reused process, killed (too many idle) or gone: nobody waits for it.
                    os.waitpid(child, 0)
                    continue
                _, status = os.waitpid(child, 0)
                answer(conn, os.waitstatus_to_exitcode(status))


def handle(conn, listener):
    """The previous loop's handler process (--previous): receives one request, forks its program, waits for it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    listener.close()
    try:
        fds, cwd, argv, env, _ = receive(conn)
    except (OSError, ValueError):
        os._exit(1)
    child = os.fork()
    if child == 0:
        conn.close()
        run_on(fds, cwd, argv, env, fast=False)
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
    if PREVIOUS:
        # The previous path: a handler process per program, no code cache.
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        gc.collect()
        gc.freeze()
        print("ready", flush=True)
        while True:
            conn, _ = listener.accept()
            if os.fork() == 0:
                handle(conn, listener)
            conn.close()
    # The verifier runner finds cached_code here (verifier-runner.ts).
    sys.modules["_tbrl_gate_server"] = sys.modules[__name__]
    SNAPSHOT.update(process_state())
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    serve(listener)


if __name__ == "__main__":
    main()
`;

export const CLIENT_C = String.raw`/* python3 stand-in for the host gates: hands argv, env, cwd and fds 0-2 to a warm interpreter (the
 * zygote) that forks and runs the program; anything it does not handle execs the real interpreter.
 * Built with -DSHARED_RUNS it is the bash stand-in: a "bash ENTRY INPUT_DIR OUTPUT_DIR" run with its
 * three standard fds on /dev/null goes to the server, which may answer with a run it has kept for the
 * same inputs (see run_plan); anything else, or the server's "run it yourself", execs the real bash. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;
#ifndef REAL_PROGRAM
#error REAL_PROGRAM
#endif

static void fallback(char **argv) {
  execv(REAL_PROGRAM, argv);
  perror("exec " REAL_PROGRAM);
  _exit(127);
}

#ifdef SHARED_RUNS
#define MODE "bash"
static int supported(int argc, char **argv) {
  const char *scope = getenv("TBRL_SHARED_RUNS");
  if (!scope || !*scope || argc != 4) return 0;
  for (int i = 1; i < 4; i++) if (argv[i][0] == '-' || argv[i][0] == 0) return 0;
  struct stat null, fd;
  if (stat("/dev/null", &null) < 0) return 0;
  for (int i = 0; i < 3; i++) {
    if (fstat(i, &fd) < 0 || !S_ISCHR(fd.st_mode) || fd.st_rdev != null.st_rdev) return 0;
  }
  return 1;
}
#else
#define MODE "python"
static int supported(int argc, char **argv) {
  if (argc < 2) return 0;
  if (strcmp(argv[1], "-c") == 0 || strcmp(argv[1], "-m") == 0) return argc >= 3;
  return argv[1][0] != '-';
}
#endif

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
  size_t size = sizeof MODE + strlen(cwd) + 1;
  for (int i = 0; i < argc; i++) size += strlen(argv[i]) + 1;
  size += 1;
  for (char **e = environ; *e; e++) size += strlen(*e) + 1;
  char *buf = malloc(size), *p = buf;
  if (!buf) fallback(argv);
  p = stpcpy(p, MODE) + 1;
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
  /* The server ran nothing (the run cannot be shared): run it here. */
  if (status == INT32_MIN) { close(s); fallback(argv); }
#ifdef SHARED_RUNS
  /* Not kept yet: run bash as this process's child, then report its status so that the server keeps
   * the run (it reads the trees before answering, so nothing changes them meanwhile). */
  if (status == INT32_MIN + 1) {
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) { close(s); fallback(argv); }
    if (child == 0) {
      /* Killed with this process (a caller's timeout kills the stand-in). */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(137);
      close(s);
      fallback(argv);
    }
    int st;
    while (waitpid(child, &st, 0) < 0) if (errno != EINTR) { perror("waitpid"); return 255; }
    status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    if (write_all(s, (const char *)&status, sizeof status) == 0) {
      int32_t ack;
      got = 0;
      while (got < sizeof ack) {
        ssize_t r = read(s, (char *)&ack + got, sizeof ack - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
      }
    }
  }
#endif
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

/** The first executable `name` on PATH (the real bash: the gates' own directories are not on this process's PATH). */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir.startsWith('/')) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      if (statSync(join(dir, name)).isFile()) return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Compiles the client once per real program into a shared cache directory (atomic rename), as
 * `python3` or, with `bash`, as the bash stand-in of shared runs (its own directory, put first on
 * PATH only for the graders' pipeline runs).
 */
async function compiledClient(real: string, as: 'python3' | 'bash' = 'python3'): Promise<string | undefined> {
  // The build (static or not) is part of the key: a client built before this one is not reused.
  const key = createHash('sha256').update(CLIENT_C).update(real).update(as).update('static-first').digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `tbrl-gate-${as === 'bash' ? 'bash' : 'python'}-${key}`);
  const bin = join(dir, as);
  if (existsSync(bin)) return dir;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, '.build-'));
  try {
    await writeFile(join(work, 'client.c'), CLIENT_C);
    // Statically linked where the host has a static libc: the client is exec'd for every program the
    // gates run (~200 a task), and a static binary starts in about two thirds of the CPU (no ld.so).
    const flags = ['-O2', `-DREAL_PROGRAM=${JSON.stringify(real)}`, ...(as === 'bash' ? ['-DSHARED_RUNS'] : []), '-o', join(work, as), join(work, 'client.c')];
    const cc = (await runProcess(['cc', '-static', ...flags])).code === 0 ? { code: 0 } : await runProcess(['cc', ...flags]);
    if (cc.code !== 0) return undefined;
    await chmod(join(work, as), 0o755);
    await rename(join(work, as), bin);
    return dir;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Starts the gate server for `python` (default python3). Without a C compiler or with a server that
 * does not come up, the gates still skip a pyenv-style shim by putting the real interpreter's
 * directory first on PATH (what `pyenv exec` does for the programs it starts anyway).
 * `previous`: the server loop before issue #20's last round (a handler process per program, no
 * code cache, no spawner, pytest imported), for same-run baselines. `pytest`: a server that has
 * imported pytest, for pytest sessions (no spawner).
 */
export async function startGatePython(python = 'python3', options: { previous?: boolean; pytest?: boolean } = {}): Promise<GatePython> {
  const real = await realInterpreter(python);
  if (!real) return { env: {}, mode: 'direct', close: async () => {} };
  const path = `${dirname(real)}:${process.env.PATH ?? ''}`;
  const direct: GatePython = { env: { PATH: path }, mode: 'direct', close: async () => {} };
  const clientDir = await compiledClient(real).catch(() => undefined);
  if (!clientDir) return direct;
  const home = await mkdtemp(join(tmpdir(), 'tbrl-gate-server-'));
  await writeFile(join(home, 'zygote.py'), ZYGOTE_PY);
  const socket = join(home, 'sock');
  const withPytest = options.previous || options.pytest;
  // Shared pipeline runs: the fast loop only, with a real bash and its stand-in compiled.
  const realBash = withPytest ? undefined : onPath('bash');
  const bashDir = realBash ? await compiledClient(realBash, 'bash').catch(() => undefined) : undefined;
  const child: ChildProcess = spawn(real, [join(home, 'zygote.py'), socket, ...(options.previous ? ['--previous'] : []), ...(withPytest ? PRELOAD_PYTEST : PRELOAD_PROGRAMS)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(bashDir && realBash ? { TBRL_REAL_BASH: realBash } : {}) } });
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
  // The spawner hands the requests these clients would make straight to this server (spawner.ts).
  const spawner = withPytest ? undefined : startSpawner(real, runProcess, { [join(clientDir, 'python3')]: 'python', ...(bashDir ? { [join(bashDir, 'bash')]: 'bash' as const } : {}) });
  let pytestServer: Promise<GatePython> | undefined;
  return {
    env,
    mode: 'warm',
    sharedRunsPath: bashDir ? `${bashDir}:${env.PATH}` : undefined,
    verifierRunner,
    run: spawner?.run,
    handedOver: spawner?.handedOver,
    allowReuse: spawner && !withPytest ? (scripts) => spawner.allow(scripts.map((text) => createHash('sha256').update(text).digest('hex')), socket) : undefined,
    pytestEnv: withPytest ? undefined : async () => {
      const server = await (pytestServer ??= startGatePython(python, { pytest: true }));
      // No pytest server (it did not come up): this one runs the session, importing pytest itself.
      return server.mode === 'warm' ? server.env : {};
    },
    close: async () => {
      spawner?.close();
      if (pytestServer) await (await pytestServer).close();
      process.removeListener('exit', onExit);
      await cleanup();
    },
  };
}
