"""Checks /app/out against counts computed here from /app/data/input.txt."""
import json
import re
from collections import Counter
from pathlib import Path

INPUT = Path("/app/data/input.txt")
COUNTS = Path("/app/out/counts.json")
SUMMARY = Path("/app/out/summary.txt")


def expected_pairs():
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", INPUT.read_text(encoding="utf-8"))]
    return words, sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))


def load_counts():
    data = json.loads(COUNTS.read_text(encoding="utf-8"))
    assert isinstance(data, list), "counts.json must be a JSON array"
    return [tuple(pair) for pair in data]


def test_script_exists():
    assert Path("/app/wordfreq.py").is_file()


def test_counts_correct():
    _, pairs = expected_pairs()
    assert dict(load_counts()) == dict(pairs)


def test_counts_sorted():
    _, pairs = expected_pairs()
    assert load_counts() == [tuple(p) for p in pairs]


def test_summary_line():
    words, pairs = expected_pairs()
    lines = SUMMARY.read_text(encoding="utf-8").splitlines()
    assert lines == [f"{len(pairs)} distinct words, {len(words)} total, top: {pairs[0][0]}"]
