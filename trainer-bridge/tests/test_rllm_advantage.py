import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tbrl_bridge.rllm_advantage import apply_depgpo, install_in_rllm

VECTOR = json.loads((Path(__file__).resolve().parents[2] / "test" / "vectors" / "depgpo" / "02-indirect-credit.json").read_text())


@dataclass
class Step:
    advantage: object = None


@dataclass
class Traj:
    reward: float
    steps: list
    info: dict = field(default_factory=dict)


@dataclass
class Group:
    trajectories: list


def test_per_step_advantages_match_the_shared_vector():
    exp = VECTOR["expected"]
    rewards = VECTOR["group"]["rewards"]
    T = len(exp["factors"])
    trajs = [Traj(r, [Step() for _ in range(T)], {"depgpo": {"factors": exp["factors"], "z": exp["z"]}}) for r in rewards]
    stats = apply_depgpo([Group(trajs)])
    assert stats == {"trajectories": 3, "depgpo": 3, "fallback": 0}
    got = [s.advantage for s in trajs[VECTOR["group"]["index"]].steps]
    assert got == pytest.approx(exp["stepAdvantages"], abs=1e-12)
    assert [s.advantage for s in trajs[0].steps] == [0.0] * T  # reward at the mean: no signal


def test_missing_or_misaligned_credit_falls_back_to_grpo():
    a = Traj(1.0, [Step(), Step()], {"depgpo": {"factors": [2.0], "z": 1.0}})  # one factor for two steps
    b = Traj(0.0, [Step()])
    stats = apply_depgpo([Group([a, b])])
    assert stats["fallback"] == 2
    assert [s.advantage for s in a.steps] == pytest.approx([2 ** -0.5] * 2)
    assert b.steps[0].advantage == pytest.approx(-(2 ** -0.5))


def test_install_patches_every_binding_of_rllms_function(monkeypatch):
    calls = []

    def original(groups, cfg):
        calls.append("original")

    pkg = types.ModuleType("rllm")
    trainer = types.ModuleType("rllm.trainer")
    common = types.ModuleType("rllm.trainer.common")
    adv = types.ModuleType("rllm.trainer.common.advantage")
    adv.compute_advantage_from_trajectory_groups = original
    user = types.ModuleType("some_rllm_trainer")  # a module that did `from ... import compute_advantage_from_trajectory_groups`
    user.compute_advantage_from_trajectory_groups = original
    for name, mod in {"rllm": pkg, "rllm.trainer": trainer, "rllm.trainer.common": common, "rllm.trainer.common.advantage": adv, "some_rllm_trainer": user}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    pkg.trainer, trainer.common, common.advantage = trainer, common, adv
    assert install_in_rllm() is None
    assert adv.compute_advantage_from_trajectory_groups is user.compute_advantage_from_trajectory_groups is not original
    t = Traj(1.0, [Step(), Step()], {"depgpo": {"factors": [0.0, 2.0], "z": 1.0}})
    u = Traj(0.0, [Step()])
    user.compute_advantage_from_trajectory_groups([Group([t, u])], types.SimpleNamespace(norm_adv_by_std_in_grpo=True))
    assert calls == []
    assert [s.advantage for s in t.steps] == pytest.approx([0.0, 2 * 2 ** -0.5])
    assert install_in_rllm() is None  # idempotent


def test_install_says_why_without_rllm():
    if "rllm" not in sys.modules:
        reason = install_in_rllm()
        assert reason is not None and "rLLM is not importable" in reason
