"""The bundle as unpacked by Ray into the job's working directory: check it, convert the dataset."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

BUNDLE_SCHEMA = "tbrl.bundle/1"


class BundleError(RuntimeError):
    pass


@dataclass
class Bundle:
    root: Path
    manifest: dict

    @property
    def tasks(self) -> list[dict]:
        return self.manifest.get("tasks", [])

    @property
    def trajectories(self) -> list[dict]:
        return self.manifest.get("trajectories", [])

    def advantages(self) -> dict:
        return json.loads((self.root / "advantages.json").read_text(encoding="utf-8"))

    def overrides(self) -> dict:
        return json.loads((self.root / "overrides.json").read_text(encoding="utf-8"))


def load_bundle(root: Path) -> Bundle:
    """Reads manifest.json and checks every listed file against its sha256."""
    mf = root / "manifest.json"
    if not mf.is_file():
        raise BundleError(f"{root} has no manifest.json: this job was not submitted by `tbrl train submit` (or the working_dir was not unpacked)")
    manifest = json.loads(mf.read_text(encoding="utf-8"))
    if manifest.get("schema") != BUNDLE_SCHEMA:
        raise BundleError(f"manifest schema {manifest.get('schema')!r} is not {BUNDLE_SCHEMA!r}: update trainer-bridge or tbrl so both speak the same bundle version")
    bad = []
    for rel, digest in sorted(manifest.get("files", {}).items()):
        p = root / rel
        if not p.is_file():
            bad.append(f"{rel}: missing")
            continue
        got = hashlib.sha256(p.read_bytes()).hexdigest()
        if got != digest:
            bad.append(f"{rel}: sha256 {got[:12]} != manifest {digest[:12]}")
    if bad:
        raise BundleError("bundle files do not match the manifest:\n  " + "\n  ".join(bad[:10]))
    return Bundle(root, manifest)


def dataset_rows(bundle: Bundle) -> list[dict]:
    path = bundle.root / "data" / "train.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def convert_dataset(bundle: Bundle) -> tuple[Optional[Path], str]:
    """data/train.jsonl -> data/train.parquet (verl/rLLM read parquet). Returns (path, note)."""
    rows = dataset_rows(bundle)
    for i, r in enumerate(rows):
        for key in ("data_source", "prompt", "reward_model", "extra_info"):
            if key not in r:
                raise BundleError(f"data/train.jsonl row {i + 1} has no {key!r}")
        json.loads(r["extra_info"]["task"])  # the full task must be there and parse
    try:
        import pyarrow as pa  # type: ignore
        import pyarrow.parquet as pq  # type: ignore
    except ImportError as err:
        return None, f"pyarrow is not installed ({err}); pip install pyarrow to write parquet"
    out = bundle.root / "data" / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out, f"{len(rows)} row(s) -> {out.name}"
