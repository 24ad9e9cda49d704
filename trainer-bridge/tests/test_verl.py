"""The estimator inside the real verl 0.9.1 (from PyPI, CPU tensors): its registry, its
compute_advantage on a DataProto batch, and its Hydra config for every GPU preset.

These need the training venv (.venv/train, made by scripts/setup.sh); scripts/test.mjs runs the
whole pytest suite with it when it exists."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs .venv/train (bash scripts/setup.sh)")
pytest.importorskip("verl.trainer.ppo.core_algos", reason="needs .venv/train (bash scripts/setup.sh)")

import numpy as np  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos, ray_trainer  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402

from tbrl_bridge.advantage import compute_depgpo_outcome_advantage, group_advantages, register_with_verl, step_factors  # noqa: E402
from tbrl_bridge.verl_glue import install_in_verl  # noqa: E402

VECTORS = sorted((Path(__file__).resolve().parents[2] / "test" / "vectors" / "depgpo").glob("*.json"))


def test_depgpo_is_in_verls_own_registry():
    assert register_with_verl() is None
    assert register_with_verl() is None  # idempotent: verl refuses a second function under one name
    assert core_algos.get_adv_estimator_fn("depgpo") is compute_depgpo_outcome_advantage
    with pytest.raises(ValueError):
        core_algos.get_adv_estimator_fn("no-such-estimator")


def vector_batch(vector: dict) -> tuple[DataProto, list[list[int]]]:
    """The vector's group as a verl batch: row i has one response token per step token of the vector's
    trajectory (rows other than the scored one reuse its layout), reward at the last token."""
    tokens = [int(n) if isinstance(n, (int, float)) and n > 0 else 0 for n in vector["input"]["stepTokens"]]
    grp = vector["group"]
    width = max(1, sum(tokens))
    sf = step_factors(vector["expected"]["stepScores"], vector["input"]["stepTokens"])
    per_token = [f / sf.z for f, n in zip(sf.factors, tokens) for _ in range(n)] or [1.0]
    rows = len(grp["rewards"])
    rewards = torch.zeros(rows, width, dtype=torch.float64)
    rewards[:, -1] = torch.tensor(grp["rewards"], dtype=torch.float64)
    mask = torch.ones(rows, width, dtype=torch.float64)
    responses = torch.zeros(rows, width, dtype=torch.long)
    factors = np.empty(rows, dtype=object)  # one list per row, as extra_fields arrive from agent loops
    for i in range(rows):
        factors[i] = list(per_token)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask, "responses": responses},
        non_tensors={"uid": np.array(["g"] * rows, dtype=object), "depgpo_token_factors": factors},
    )
    spans = []
    start = 0
    for n in tokens:
        spans.append(list(range(start, start + n)))
        start += n
    return data, spans


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_verl_compute_advantage_reproduces_the_shared_vectors(path):
    vector = json.loads(path.read_text())
    assert install_in_verl() is None
    data, spans = vector_batch(vector)
    grp = vector["group"]
    out = ray_trainer.compute_advantage(data, adv_estimator="depgpo", norm_adv_by_std_in_grpo=grp.get("normalizeStd", True), config=AlgoConfig(adv_estimator="depgpo", norm_adv_by_std_in_grpo=grp.get("normalizeStd", True)))
    adv = out.batch["advantages"][grp["index"]]
    expected = vector["expected"]["stepAdvantages"]
    checked = 0
    for t, tokens in enumerate(spans):
        for j in tokens:
            assert abs(float(adv[j]) - expected[t]) <= 1e-6, f"{path.name} step {t} token {j}: {float(adv[j])} != {expected[t]}"
            checked += 1
    assert checked == sum(len(s) for s in spans) > 0


def test_v1_trainer_module_is_patched_too():
    from verl.trainer.ppo.v1 import utils as v1_utils

    assert install_in_verl() is None
    assert hasattr(v1_utils.compute_advantage, "_tbrl_original")
    assert hasattr(ray_trainer.compute_advantage, "_tbrl_original")


def test_other_estimators_go_to_verl_untouched():
    assert install_in_verl() is None
    rewards = torch.zeros(4, 3)
    rewards[:, -1] = torch.tensor([1.0, 0.0, 0.5, 0.0])
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": torch.ones(4, 3), "responses": torch.zeros(4, 3, dtype=torch.long)}, non_tensors={"uid": np.array(["a", "a", "b", "b"], dtype=object)})
    out = ray_trainer.compute_advantage(data, adv_estimator="grpo", norm_adv_by_std_in_grpo=True)
    ref, _ = core_algos.compute_grpo_outcome_advantage(rewards, torch.ones(4, 3), np.array(["a", "a", "b", "b"], dtype=object))
    assert torch.allclose(out.batch["advantages"], ref)


def test_without_factors_depgpo_is_grpo_and_masked_rows_are_left_out():
    rewards = torch.zeros(4, 2)
    rewards[:, -1] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    mask = torch.ones(4, 2)
    mask[3] = 0  # an infra outcome: never a 0-reward sample
    adv, _ = core_algos.get_adv_estimator_fn("depgpo")(token_level_rewards=rewards, response_mask=mask, index=["g"] * 4)
    expected = group_advantages([1.0, 0.0, 0.0])
    for i in range(3):
        assert torch.allclose(adv[i], torch.full((2,), expected[i]))
    assert float(adv[3].abs().sum()) == 0.0


GPU_PRESETS = [k for k, v in json.loads((Path(__file__).resolve().parents[1] / "tbrl_bridge" / "presets.json").read_text()).items() if v.get("gpu")]


@pytest.mark.parametrize("name", GPU_PRESETS)
def test_gpu_preset_is_a_config_verl_accepts(name, tmp_path):
    from tbrl_bridge.presets import agent_loop_yaml, hydra_overrides, load_presets
    from tbrl_bridge.verl_main import compose_config, validate

    preset = load_presets()[name]
    loop = tmp_path / "loop.yaml"
    loop.write_text(agent_loop_yaml(preset, str(tmp_path)))
    for algorithm in ("grpo", "depgpo"):
        cfg = compose_config(hydra_overrides(preset, str(tmp_path), algorithm, str(loop)))
        assert register_with_verl() is None
        validate(cfg)
        assert cfg.algorithm.adv_estimator == algorithm
        assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "tbrl_env"
        assert cfg.actor_rollout_ref.rollout.n == preset["rolloutsPerTask"]
        assert cfg.trainer.n_gpus_per_node == preset["nGpusPerNode"]


def test_verl_rejects_a_config_it_cannot_run(tmp_path):
    from tbrl_bridge.presets import hydra_overrides, load_presets
    from tbrl_bridge.verl_main import compose_config, validate

    preset = load_presets()["test_8b_2_gpus"]
    with pytest.raises(Exception):
        compose_config(hydra_overrides(preset, str(tmp_path), "grpo") + ["actor_rollout_ref.no_such_key=1"])
    cfg = compose_config(hydra_overrides(preset, str(tmp_path), "grpo") + ["actor_rollout_ref.actor.ppo_mini_batch_size=3", "data.train_batch_size=1"])
    with pytest.raises(Exception):
        validate(cfg)
