"""Metrics out of the job: one JSON record per line to metrics.jsonl and to stdout.

The stdout copy is prefixed ``tbrl-metrics `` so the client's log parser (src/core/trainer/metrics.ts)
finds it in the job log; a verl-style console line (``step:N - key:value``) is printed as well.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Optional

PREFIX = "tbrl-metrics "


class MetricsWriter:
    def __init__(self, path: Optional[Path] = None, stream=None):
        self.path = path
        self.stream = stream or sys.stdout
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def _write(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True, allow_nan=False, default=str)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        self.stream.write(PREFIX + line + "\n")
        self.stream.flush()

    def step(self, step: int, **values: float) -> None:
        clean = {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and math.isfinite(v)}
        self._write({"step": step, **clean})
        # Full precision (repr round-trips): the console line and the JSON record must agree.
        pairs = " - ".join(f"{k}:{v!r}" for k, v in clean.items())
        self.stream.write(f"step:{step} - {pairs}\n")
        self.stream.flush()

    def event(self, event: str, **fields: Any) -> None:
        self._write({"event": event, **fields})
