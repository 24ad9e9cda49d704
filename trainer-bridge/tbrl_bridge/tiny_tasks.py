"""The `echo-word` family: Terminal-Bench tasks easy enough for a 135M model to solve sometimes.

Each seed asks for one word in /app/answer.txt. Two weighted tests (the file exists: 0.3, it holds
the word: 0.7) give partial rewards, so a group of rollouts usually has a reward spread to learn from
even when no rollout solves the task. Used by the cpu-tiny preset when a bundle has no tasks, by the
learning tests and by bench/train.bench.py; held-out evaluation uses seeds the training never saw.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = [
    "apple", "river", "stone", "cloud", "maple", "tiger", "piano", "lemon", "orbit", "candle",
    "forest", "silver", "rocket", "garden", "pepper", "window", "planet", "butter", "castle", "violet",
]

TEST_WEIGHTS = {"test_answer_exists": 0.3, "test_answer_word": 0.7}


def word_for(seed: int) -> str:
    return random.Random(f"echo-word-{seed}").choice(WORDS)


def task_id(seed: int) -> str:
    return f"echo-word-{seed}"


def write_task(out_dir: Path, seed: int) -> Path:
    word = word_for(seed)
    d = Path(out_dir) / task_id(seed)
    (d / "tests").mkdir(parents=True, exist_ok=True)
    (d / "task.yaml").write_text(
        "instruction: |-\n"
        f"  Write the word {word} into the file /app/answer.txt.\n"
        "author_name: TBRL Studio\nauthor_email: tbrl@example.invalid\ndifficulty: easy\ncategory: smoke\n"
        "tags:\n  - tiny\nparser_name: pytest\nmax_agent_timeout_sec: 60.0\nmax_test_timeout_sec: 30.0\n"
        "run_tests_in_same_shell: false\n",
        encoding="utf-8",
    )
    # The same base image as examples/hello-world: pytest is in it, and the studio's base-image map
    # substitutes a local stand-in where registries are unreachable.
    (d / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n\nWORKDIR /app\n", encoding="utf-8")
    (d / "run-tests.sh").write_text(
        "#!/bin/bash\nset -u\ncd /app\npython3 -m pytest -p no:cacheprovider -rA \"${TEST_DIR:-/tests}/test_outputs.py\"\n",
        encoding="utf-8",
    )
    (d / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\nANSWER = Path('/app/answer.txt')\n\n\n"
        "def test_answer_exists():\n    assert ANSWER.is_file()\n\n\n"
        f"def test_answer_word():\n    assert ANSWER.read_text().strip() == {word!r}\n",
        encoding="utf-8",
    )
    (d / "test_weights.json").write_text(json.dumps(TEST_WEIGHTS, indent=2) + "\n", encoding="utf-8")
    (d / "solution.sh").write_text(f"#!/bin/bash\necho {word} > /app/answer.txt\n", encoding="utf-8")
    return d


def write_family(out_dir: Path, seeds: list[int]) -> list[Path]:
    return [write_task(out_dir, s) for s in seeds]
