/**
 * tests/progress.py: the progress grader rendered into every task. It reads tests/progress.json
 * (contract + W's expected artifacts), grades the workspace node by node and prints Φ as JSON.
 * A node earns its artifact's credit only with its evidence (contract.ts EvidenceKind): inputs
 * intact, the artifact reproduced by the agent's entry point, and that entry point tracking a
 * held-out partition.
 * Written independently of the verifier and the solver (gates.ts checks they share no code).
 */
export const PROGRESS_PY = `#!/usr/bin/env python3
"""Progress grader: per-node credit c_v, gated credit and the potential Phi, printed as one JSON line.

Usage: progress.py [--root APP_DIR]     (default: $TBRL_APP, else /app)
"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading

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


def fingerprint(blob):
    return hashlib.sha256(blob).hexdigest()


def sqlite_rows_fingerprint(path, info):
    try:
        link = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
        try:
            picked = link.execute("SELECT " + ", ".join(info["columns"]) + " FROM " + info["table"] + " ORDER BY rowid").fetchall()
        finally:
            link.close()
    except sqlite3.Error:
        return None
    return fingerprint("\\n".join("\\t".join(str(cell) for cell in row) for row in picked).encode("utf-8"))


def inputs_intact(data_root, declared):
    """Evidence inputs-intact: the data directory holds exactly the shipped files, unchanged."""
    present = set()
    for folder, _, names in os.walk(data_root):
        for name in names:
            present.add(os.path.relpath(os.path.join(folder, name), data_root).replace(os.sep, "/"))
    if present != set(declared["files"]) | set(declared["tables"]):
        return False
    for rel, digest in declared["files"].items():
        try:
            with open(os.path.join(data_root, rel), "rb") as handle:
                if fingerprint(handle.read()) != digest:
                    return False
        except OSError:
            return False
    for rel, info in declared["tables"].items():
        if sqlite_rows_fingerprint(os.path.join(data_root, rel), info) != info["digest"]:
            return False
    return True


def load_role(path, role):
    if role == "summary":
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None
    return read_nonblank(path)


def run_entry(entry, source, target, timeout):
    os.mkdir(target)
    child = subprocess.Popen(["bash", entry, source, target], cwd=os.path.dirname(target), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    # A timer kills it at the timeout, so the wait blocks (a wait with a timeout polls with sleeps).
    alarm = threading.Timer(timeout, child.kill)
    alarm.start()
    try:
        child.wait()
    finally:
        alarm.cancel()


def rerun(root, probe, names, watched):
    """Run the agent's entry point on a private copy of the data, and on a copy without one partition."""
    entry = os.path.join(root, probe["entry"])
    scratch = tempfile.mkdtemp(prefix="tbrl-progress-")
    saved = snapshot(watched)
    found = {"full": {}, "held": {}}
    try:
        for variant in ("full", "held"):
            source = os.path.join(scratch, variant + "-in")
            shutil.copytree(os.path.join(root, probe["data"]), source, symlinks=True)
            if variant == "held":
                index_file = os.path.join(source, probe["index"])
                with open(index_file, encoding="utf-8") as handle:
                    kept = [row for row in handle.read().split("\\n") if row.split("\\t")[0] != probe["holdout_file"]]
                with open(index_file, "w", encoding="utf-8") as handle:
                    handle.write("\\n".join(kept))
                os.remove(os.path.join(os.path.dirname(index_file), probe["holdout_file"]))
            target = os.path.join(scratch, variant + "-out")
            run_entry(entry, source, target, probe["timeout"])
            for role, name in names.items():
                found[variant][role] = load_role(os.path.join(target, name), role)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        restore(saved)
    return found


def follows_holdout(role, held, full, want_full, want_held):
    """Evidence tracks-holdout: the held-out run changed, and kept nothing only the dropped partition explains."""
    if held is None or held == full:
        return False
    if role == "summary":
        if not isinstance(held, dict):
            return False
        return all(held.get(key) != value for key, value in want_full.items() if want_held.get(key) != value)
    gone = {",".join(cells) for cells in want_full["rows"]} - {",".join(cells) for cells in want_held["rows"]}
    return not any(text in gone for text in held[1:])


def main(argv):
    root = os.environ.get("TBRL_APP", "/app")
    if len(argv) == 2 and argv[0] == "--root":
        root = argv[1]
    with open(os.path.join(HERE, "progress.json"), encoding="utf-8") as handle:
        contract = json.load(handle)
    paths = contract["outputs"]
    wanted = contract["expected"]
    wanted_held = contract["expected_holdout"]
    probe = contract["pipeline"]
    seen = {role: load_role(os.path.join(root, path), role) for role, path in paths.items()}
    artifact = {}
    for role in paths:
        if role == "summary":
            artifact[role] = summary_credit(os.path.join(root, paths[role]), wanted[role])
        else:
            artifact[role] = table_credit(seen[role], wanted[role])
    intact = inputs_intact(os.path.join(root, probe["data"]), contract["inputs"])
    runs = None
    if intact and max(artifact.values()) > 0 and os.path.isfile(os.path.join(root, probe["entry"])):
        names = {role: os.path.basename(path) for role, path in paths.items()}
        runs = rerun(root, probe, names, [os.path.join(root, p) for p in paths.values()])
    raw, evidence = {}, {}
    for node in contract["nodes"]:
        ident = node["id"]
        if ident in paths:
            proof = runs is not None and runs["full"][ident] == seen[ident] and follows_holdout(
                ident, runs["held"][ident], runs["full"][ident], wanted[ident], wanted_held[ident])
            evidence[ident] = bool(proof)
            raw[ident] = artifact[ident] if proof else 0.0
        else:
            held_report = runs["held"]["report"] if runs is not None else None
            evidence[ident] = held_report is not None and table_credit(held_report, probe["expected_report"]) == 1.0
            raw[ident] = 1.0 if evidence[ident] else 0.0
    gated, phi = {}, 0.0
    for node in contract["nodes"]:
        gated[node["id"]] = min([raw[node["id"]]] + [gated[p] for p in node["preconditions"]])
        phi += node["weight"] * gated[node["id"]]
    print(json.dumps({"phi": round(phi, 12), "credit": raw, "gated": gated, "evidence": evidence,
                      "inputs_intact": intact, "lambda": contract["lambda"]}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;
