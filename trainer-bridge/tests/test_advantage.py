import json
import math
from pathlib import Path

import pytest

from tbrl_bridge.advantage import (
    check_advantage_export,
    compute_depgpo_advantage_np,
    factor_spread,
    group_advantages,
    iter_vector_checks,
    register_with_verl,
    step_advantages,
    step_factors,
    token_factors,
)

VECTORS = sorted((Path(__file__).resolve().parents[2] / "test" / "vectors" / "depgpo").glob("*.json"))


def test_vectors_exist():
    assert len(VECTORS) >= 5


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_shared_vector_matches_typescript_numbers(path):
    vector = json.loads(path.read_text())
    checks = list(iter_vector_checks(vector))
    assert len(checks) >= 3
    for what, expected, got in checks:
        assert abs(expected - got) <= 1e-12, f"{path.name} {what}: expected {expected}, got {got}"


def test_factors_min_step_zero_mean_one():
    sf = step_factors([0, 1, 0, 1, 1, 0.5, 0.5], [20, 20, 10, 30, 20, 10, 10])
    assert sf.factors[0] == 0
    assert math.isclose(sum(sf.factors) / len(sf.factors), 1.0)
    assert math.isclose(sf.z, 7 / 6)
    assert sf.fallback is None


def test_equal_scores_fall_back_with_the_typescript_message():
    sf = step_factors([0.5, 0.5], [3, 4])
    assert sf.factors == [1.0, 1.0] and sf.z == 1.0
    assert sf.fallback == "all step scores are equal (0.5): no step is singled out"
    assert step_factors([0, 0], [1, 1]).fallback == "all step scores are equal (0): no step is singled out"


def test_zero_z_falls_back():
    sf = step_factors([0, 1], [10, 0])
    assert sf.fallback and "Z = 0" in sf.fallback
    assert sf.factors == [1.0, 1.0]


def test_group_advantages_sample_std_no_epsilon():
    assert group_advantages([0.5, 1, 0]) == [0.0, 1.0, -1.0]
    assert group_advantages([1, 1, 1]) == [0.0, 0.0, 0.0]
    assert group_advantages([0.7]) == [0.0]
    assert group_advantages([1, 0], normalize_std=False) == [0.5, -0.5]


def test_token_weighted_mean_of_step_advantages_equals_group_advantage():
    tokens = [20, 5, 40, 10]
    sf = step_factors([0.2, 0.9, 0.0, 0.4], tokens)
    adv = step_advantages(sf.factors, sf.z, 1.7)
    weighted = sum(a * n for a, n in zip(adv, tokens)) / sum(tokens)
    assert math.isclose(weighted, 1.7, rel_tol=1e-12)


def test_plain_batch_estimator_groups_by_index_and_scales_tokens():
    mult = [token_factors([2, 1], [0.0, 2.0], 1.0), token_factors([2, 1], [1.0, 1.0], 1.0), [1.0, 1.0, 1.0]]
    mask = [[1, 1, 1], [1, 1, 0], [1, 1, 1]]
    out = compute_depgpo_advantage_np([1.0, 0.0, 5.0], ["a", "a", "b"], mult, mask)
    s = math.sqrt(0.5)
    assert out[0] == pytest.approx([0.0, 0.0, 2 * 0.5 / s])
    assert out[1] == pytest.approx([-0.5 / s, -0.5 / s, 0.0])
    assert out[2] == [0.0, 0.0, 0.0]  # a group of one carries no relative signal


def test_check_export_finds_a_tampered_advantage():
    export = {
        "schema": "tbrl.advantages/1", "normalizeStd": True,
        "groups": [{"key": "t"}],
        "trajectories": [
            {"path": "a", "group": "t", "reward": 1.0, "groupAdvantage": 0.7071067811865475,
             "steps": [{"score": 0, "tokens": 10, "factor": 0.0, "advantage": 0.0}, {"score": 1, "tokens": 10, "factor": 2.0, "advantage": 1.414213562373095}]},
            {"path": "b", "group": "t", "reward": 0.0, "groupAdvantage": -0.7071067811865475,
             "steps": [{"score": 1, "tokens": 10, "factor": 1.0, "advantage": -0.7071067811865475}]},
        ],
    }
    ok = check_advantage_export(export, "depgpo")
    assert ok.max_abs_diff < 1e-12
    assert ok.trajectories[0].spread == 2.0
    export["trajectories"][0]["steps"][1]["advantage"] = 1.5
    assert check_advantage_export(export, "depgpo").max_abs_diff > 0.08
    with pytest.raises(ValueError):
        check_advantage_export({"schema": "x"}, "grpo")


def test_spread():
    assert factor_spread([0, 1.75, 0.875]) == 1.75
    assert factor_spread([]) == 0.0


def test_verl_registration_says_why_not_when_absent():
    try:
        import verl  # noqa: F401
    except ImportError:
        reason = register_with_verl()
        assert reason is not None and "verl is not importable" in reason
