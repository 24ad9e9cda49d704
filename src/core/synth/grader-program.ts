/**
 * tests/progress.py: the progress grader rendered into every task. It reads tests/progress.json
 * (contract + W's expected artifacts), grades the workspace node by node and prints Φ as JSON.
 * Written independently of the verifier and the solver (gates.ts checks they share no code).
 */
export const PROGRESS_PY = `#!/usr/bin/env python3
"""Progress grader: per-node credit c_v, gated credit and the potential Phi, printed as one JSON line.

Usage: progress.py [--root APP_DIR]     (default: $TBRL_APP, else /app)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def read_nonblank(path):
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return [piece.rstrip("\\r") for piece in text.split("\\n") if piece.strip()]


def table_credit(lines, expected):
    """Share of expected rows present (as a multiset) over the larger of the two row counts."""
    if not lines or lines[0] != ",".join(expected["header"]):
        return 0.0
    wanted = [",".join(cells) for cells in expected["rows"]]
    got = lines[1:]
    remaining = {}
    for text in wanted:
        remaining[text] = remaining.get(text, 0) + 1
    matched = 0
    for text in got:
        if remaining.get(text, 0) > 0:
            remaining[text] -= 1
            matched += 1
    size = max(len(wanted), len(got))
    if size == 0:
        return 1.0
    if matched == size and got != wanted:
        # Every row is right but the order is not the one asked for.
        return 0.5
    return matched / size


def summary_credit(path, expected):
    try:
        with open(path, encoding="utf-8") as handle:
            seen = json.load(handle)
    except (OSError, ValueError):
        return 0.0
    if not isinstance(seen, dict):
        return 0.0
    agree = 0
    for key, value in expected.items():
        if key in seen and type(seen[key]) is type(value) and seen[key] == value:
            agree += 1
    return agree / len(expected)


def snapshot(paths):
    saved = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                saved[path] = handle.read()
        except OSError:
            saved[path] = None
    return saved


def restore(saved):
    """Measuring must not change the workspace, even when the pipeline ignores its output argument."""
    for path, content in saved.items():
        try:
            if content is None:
                if os.path.exists(path):
                    os.remove(path)
            else:
                with open(path, "rb") as handle:
                    same = handle.read() == content
                if not same:
                    with open(path, "wb") as handle:
                        handle.write(content)
        except OSError:
            pass


def pipeline_credit(root, probe, watched):
    """Re-run the agent's entry point without one partition: only a real pipeline gets W's answer."""
    entry = os.path.join(root, probe["entry"])
    if not os.path.isfile(entry):
        return 0.0
    scratch = tempfile.mkdtemp(prefix="tbrl-progress-")
    saved = snapshot(watched)
    try:
        source = os.path.join(scratch, "in")
        shutil.copytree(os.path.join(root, probe["data"]), source, symlinks=True)
        index_file = os.path.join(source, probe["index"])
        with open(index_file, encoding="utf-8") as handle:
            kept = [row for row in handle.read().split("\\n") if row.split("\\t")[0] != probe["holdout_file"]]
        with open(index_file, "w", encoding="utf-8") as handle:
            handle.write("\\n".join(kept))
        os.remove(os.path.join(os.path.dirname(index_file), probe["holdout_file"]))
        target = os.path.join(scratch, "out")
        os.mkdir(target)
        try:
            subprocess.run(["bash", entry, source, target], cwd=scratch, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=probe["timeout"], check=False)
        except subprocess.TimeoutExpired:
            return 0.0
        produced = read_nonblank(os.path.join(target, probe["report_name"]))
        return 1.0 if table_credit(produced, probe["expected_report"]) == 1.0 else 0.0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        restore(saved)


def main(argv):
    root = os.environ.get("TBRL_APP", "/app")
    if len(argv) == 2 and argv[0] == "--root":
        root = argv[1]
    with open(os.path.join(HERE, "progress.json"), encoding="utf-8") as handle:
        contract = json.load(handle)
    paths = contract["outputs"]
    wanted = contract["expected"]
    graders = {
        "clean": lambda: table_credit(read_nonblank(os.path.join(root, paths["clean"])), wanted["clean"]),
        "enriched": lambda: table_credit(read_nonblank(os.path.join(root, paths["enriched"])), wanted["enriched"]),
        "report": lambda: table_credit(read_nonblank(os.path.join(root, paths["report"])), wanted["report"]),
        "summary": lambda: summary_credit(os.path.join(root, paths["summary"]), wanted["summary"]),
        "pipeline": lambda: pipeline_credit(root, contract["pipeline"], [os.path.join(root, p) for p in paths.values()]),
    }
    raw, gated, skipped, phi = {}, {}, [], 0.0
    for node in contract["nodes"]:
        ceiling = min([gated[p] for p in node["preconditions"]] + [1.0])
        if ceiling > 0:
            raw[node["id"]] = float(graders[node["id"]]())
        else:
            # A node whose preconditions have no credit cannot earn any: skip the (possibly slow) grader.
            raw[node["id"]] = 0.0
            skipped.append(node["id"])
        gated[node["id"]] = min(raw[node["id"]], ceiling)
        phi += node["weight"] * gated[node["id"]]
    print(json.dumps({"phi": round(phi, 12), "credit": raw, "gated": gated, "skipped": skipped,
                      "lambda": contract["lambda"]}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;
