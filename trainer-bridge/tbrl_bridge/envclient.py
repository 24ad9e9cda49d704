"""Client for ``tbrl env-server``: JSON-RPC 2.0 over stdio, one JSON object per line.

The server is the TypeScript core itself (task loading, Docker sandbox, action parser and
executors, reward, DepGPO), so an episode here is exactly an episode in the editor.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import Any, Optional, Sequence


class EnvServerError(RuntimeError):
    """A JSON-RPC error from the server; ``code`` and ``data`` (the TbrlError code/fix) are kept."""

    def __init__(self, message: str, code: int = -32000, data: Any = None):
        super().__init__(message)
        self.code = code
        self.data = data


def find_tbrl_command(env: Optional[dict] = None) -> tuple[Optional[list[str]], str]:
    """The command that runs the tbrl CLI on this node, and how it was found (or why not).

    TBRL_CLI (a shell-quoted command, e.g. "node /opt/tbrl/dist/cli.js") wins; then ``tbrl`` on PATH.
    """
    env = os.environ if env is None else env
    raw = env.get("TBRL_CLI", "").strip()
    if raw:
        return shlex.split(raw), "TBRL_CLI"
    found = shutil.which("tbrl", path=env.get("PATH"))
    if found:
        return [found], f"tbrl on PATH ({found})"
    return None, "no TBRL_CLI and no tbrl on PATH (install TBRL Studio on the nodes: npm i -g tbrl-studio, or set TBRL_CLI='node /path/to/dist/cli.js')"


class EnvServerClient:
    """Starts ``<tbrl> env-server`` and calls it. Use as a context manager; ``close`` ends the process."""

    def __init__(self, command: Optional[Sequence[str]] = None, cwd: Optional[str] = None, env: Optional[dict] = None, timeout: float = 600.0):
        if command is None:
            command, how = find_tbrl_command(env)
            if command is None:
                raise EnvServerError(f"cannot start tbrl env-server: {how}")
        self.command = list(command) + ["env-server"]
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._stderr: deque[str] = deque(maxlen=50)
        self.proc = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=None if env is None else dict(env),
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip("\n"))

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def call(self, method: str, params: Optional[dict] = None, timeout: Optional[float] = None) -> Any:
        if self.proc.poll() is not None:
            raise EnvServerError(f"tbrl env-server exited with code {self.proc.returncode}; its stderr:\n{self.stderr_tail()}")
        req_id = next(self._ids)
        msg = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        result: dict = {}
        done = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                line = line.strip()
                if not line:
                    continue
                try:
                    reply = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not ours: the protocol reserves stdout for replies, but be lenient
                if reply.get("id") == req_id:
                    result["reply"] = reply
                    break
            done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if not done.wait(timeout if timeout is not None else self.timeout):
            raise EnvServerError(f"tbrl env-server did not answer {method} within {timeout or self.timeout} s")
        reply = result.get("reply")
        if reply is None:
            self.proc.wait(timeout=5)
            raise EnvServerError(f"tbrl env-server exited (code {self.proc.returncode}) before answering {method}; its stderr:\n{self.stderr_tail()}")
        if "error" in reply:
            err = reply["error"]
            raise EnvServerError(err.get("message", "error"), err.get("code", -32000), err.get("data"))
        return reply.get("result")

    # The environment's methods, named as in the protocol.
    def initialize(self) -> dict:
        return self.call("initialize")

    def reset(self, task: str, **options: Any) -> dict:
        return self.call("reset", {"task": str(Path(task).resolve()), **options})

    def step(self, action: str, tokens: Optional[int] = None) -> dict:
        """``tokens``: how many tokens the policy generated for this turn (DepGPO's Z weights)."""
        return self.call("step", {"action": action, **({"tokens": int(tokens)} if tokens is not None else {})})

    def evaluate(self, end_reason: str = "max-steps") -> dict:
        return self.call("evaluate", {"endReason": end_reason})

    def credit(self, **params: Any) -> dict:
        return self.call("credit", params)

    def close_episode(self) -> dict:
        return self.call("close")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # EOF: the server closes its sandbox and exits
                self.proc.wait(timeout=60)
            except Exception:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self) -> "EnvServerClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
