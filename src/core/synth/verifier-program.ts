/**
 * tests/test_outputs.py: the strict verifier. Exact outputs, then a hidden metamorphic suite that
 * re-runs the agent's pipeline (renamed shards behind a reversed index must give the same outputs;
 * one extra record on top of stale outputs must move the report by exactly that record). Pass means
 * every test passes; test_weights.json puts all weight on test_strict_verdict, so a partial attempt
 * scores 0. Written independently of the grader and the solver.
 */
export function verifierProgram(specJson: string): string {
  if (specJson.includes("'''")) throw new Error('verifier spec must not contain triple quotes');
  return `"""Strict verifier (hidden from the agent): exact outputs plus metamorphic re-runs of the pipeline."""
import csv
import functools
import hashlib
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile

APP = pathlib.Path(os.environ.get("TBRL_APP", "/app"))
SPEC = json.loads(r'''${specJson}''')


def _csv_rows(path):
    with open(path, newline="", encoding="utf-8") as stream:
        return [record for record in csv.reader(stream) if record]


def _expect_tables(out_dir, expected):
    for role in ("clean", "enriched", "report"):
        produced = out_dir / SPEC["names"][role]
        assert produced.is_file(), f"{produced} was not written"
        assert _csv_rows(produced) == [expected[role]["header"]] + expected[role]["rows"], f"{produced} does not hold the expected rows"
    summary_path = out_dir / SPEC["names"]["summary"]
    assert summary_path.is_file(), f"{summary_path} was not written"
    assert json.loads(summary_path.read_text(encoding="utf-8")) == expected["summary"], "summary.json is wrong"


def _launch(data_dir, out_dir):
    entry = APP / SPEC["entry"]
    assert entry.is_file(), f"{entry} is missing"
    finished = subprocess.run(["bash", str(entry), str(data_dir), str(out_dir)], capture_output=True,
                              text=True, timeout=SPEC["timeout"])
    assert finished.returncode == 0, f"pipeline exited with {finished.returncode}: {finished.stderr[-600:]}"


def _private_copy():
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="tbrl-verify-"))
    shutil.copytree(APP / SPEC["data"], workdir / "input", symlinks=True)
    (workdir / "output").mkdir()
    return workdir


def check_outputs():
    _expect_tables(APP / SPEC["out_dir"], SPEC["expected"])


def check_inputs_untouched():
    """The inputs are read-only: a task solved by editing them (so a naive pipeline fits) is not solved."""
    data_dir = APP / SPEC["data"]
    shipped = SPEC["inputs"]
    listed = sorted(item.relative_to(data_dir).as_posix() for item in data_dir.rglob("*") if not item.is_dir())
    assert listed == sorted([*shipped["files"], *shipped["tables"]]), f"/app/{SPEC['data']} gained or lost files: {listed}"
    for relative, expected_hash in shipped["files"].items():
        assert hashlib.sha256((data_dir / relative).read_bytes()).hexdigest() == expected_hash, f"{relative} was edited"
    for relative, described in shipped["tables"].items():
        uri = (data_dir / relative).resolve().as_uri() + "?mode=ro"
        with sqlite3.connect(uri, uri=True) as handle:
            query = "SELECT {} FROM {} ORDER BY rowid".format(", ".join(described["columns"]), described["table"])
            dumped = "\\n".join("\\t".join(map(str, record)) for record in handle.execute(query))
        assert hashlib.sha256(dumped.encode("utf-8")).hexdigest() == described["digest"], f"table {described['table']} in {relative} was edited"


def check_entry_point():
    assert (APP / SPEC["entry"]).is_file(), "the pipeline entry point was not written"


def check_renamed_shards():
    workdir = _private_copy()
    try:
        listing = workdir / "input" / SPEC["index"]
        head, *body = [line for line in listing.read_text(encoding="utf-8").splitlines() if line]
        renamed = []
        for position, line in enumerate(body):
            name, rest = line.split("\\t", 1)
            fresh = f"m{position:02d}-{name}"
            (listing.parent / name).rename(listing.parent / fresh)
            renamed.append(f"{fresh}\\t{rest}")
        listing.write_text("\\n".join([head] + renamed[::-1]) + "\\n", encoding="utf-8")
        _launch(workdir / "input", workdir / "output")
        _expect_tables(workdir / "output", SPEC["expected"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def check_extra_record_over_stale_outputs():
    workdir = _private_copy()
    try:
        with open(workdir / "input" / SPEC["extra"]["shard"], "a", encoding="utf-8") as stream:
            stream.write(SPEC["extra"]["line"] + "\\n")
        # Yesterday's correct answers sit in the output directory: they must be replaced, not kept.
        for role in ("clean", "enriched", "report"):
            table = SPEC["expected"][role]
            with open(workdir / "output" / SPEC["names"][role], "w", newline="", encoding="utf-8") as stream:
                csv.writer(stream, lineterminator="\\n").writerows([table["header"]] + table["rows"])
        (workdir / "output" / SPEC["names"]["summary"]).write_text(json.dumps(SPEC["expected"]["summary"]), encoding="utf-8")
        _launch(workdir / "input", workdir / "output")
        report = _csv_rows(workdir / "output" / SPEC["names"]["report"])
        assert report == [SPEC["extra"]["report"]["header"]] + SPEC["extra"]["report"]["rows"], "the report ignores a new record"
        summary = json.loads((workdir / "output" / SPEC["names"]["summary"]).read_text(encoding="utf-8"))
        assert summary.get("records") == SPEC["expected"]["summary"]["records"] + 1, "the summary ignores a new record"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


CHECKS = {
    "outputs": check_outputs,
    "entry_point": check_entry_point,
    "inputs_untouched": check_inputs_untouched,
    "renamed_shards": check_renamed_shards,
    "extra_record": check_extra_record_over_stale_outputs,
}


@functools.lru_cache(maxsize=None)
def _failure(name):
    try:
        CHECKS[name]()
    except Exception as problem:  # a crash in the agent's pipeline is a failed check, not an error
        return f"{type(problem).__name__}: {problem}"
    return None


def test_outputs_exact():
    assert _failure("outputs") is None, _failure("outputs")


def test_entry_point_exists():
    assert _failure("entry_point") is None, _failure("entry_point")


def test_inputs_untouched():
    assert _failure("inputs_untouched") is None, _failure("inputs_untouched")


def test_metamorphic_renamed_shards():
    assert _failure("renamed_shards") is None, _failure("renamed_shards")


def test_counterfactual_extra_record():
    assert _failure("extra_record") is None, _failure("extra_record")


def test_strict_verdict():
    failed = {name: _failure(name) for name in CHECKS if _failure(name) is not None}
    assert not failed, failed
`;
}

export const VERIFIER_TESTS = ['test_outputs_exact', 'test_entry_point_exists', 'test_inputs_untouched', 'test_metamorphic_renamed_shards', 'test_counterfactual_extra_record', 'test_strict_verdict'];
/** All weight on the conjunction: the strict verifier is pass/fail. */
export const VERIFIER_WEIGHTS: Record<string, number> = { test_outputs_exact: 0, test_entry_point_exists: 0, test_inputs_untouched: 0, test_metamorphic_renamed_shards: 0, test_counterfactual_extra_record: 0, test_strict_verdict: 1 };
