"""cpu-tiny settings fail at once, naming the key and the fix (no model is loaded for these)."""

import pytest

from tbrl_bridge.cpu_train import TrainConfigError, tiny_config
from tbrl_bridge.episode import outcome_from
from tbrl_bridge.policy import PolicyError, check_model_path
from tbrl_bridge.presets import load_presets

PRESET = load_presets()["cpu-tiny"]


def test_preset_defaults_and_overrides():
    cfg = tiny_config(PRESET, ["tbrl.steps=2", "+tbrl.lr=1e-4", "tbrl.family_seeds=5,6"], "depgpo")
    assert (cfg.steps, cfg.lr, cfg.family_seeds, cfg.algorithm, cfg.group_size) == (2, 1e-4, [5, 6], "depgpo", PRESET["cpu"]["group_size"])


@pytest.mark.parametrize("override, needle", [
    ("actor_rollout_ref.actor.optim.lr=1e-6", "no Hydra config"),
    ("tbrl.stpes=3", "unknown cpu-tiny setting 'stpes'"),
    ("tbrl.steps=zero", "tbrl.steps=<integer>"),
    ("tbrl.lr=nan", "tbrl.lr=<number>"),
    ("tbrl.group_size=1", "group_size=2 or more"),
    ("tbrl.top_p=1.5", "top_p in (0, 1]"),
    ("tbrl.steps", "has no value"),
    ("tbrl.max_restarts=-1", "tbrl.max_restarts=<integer>"),
])
def test_bad_settings_name_cause_and_fix(override, needle):
    with pytest.raises(TrainConfigError) as err:
        tiny_config(PRESET, [override], "grpo")
    assert needle in str(err.value) and "Fix" in str(err.value)


def test_max_restarts_zero_is_allowed_and_defaults_to_one():
    assert tiny_config(PRESET, [], "grpo").max_restarts == 1
    assert tiny_config(PRESET, ["tbrl.max_restarts=0"], "grpo").max_restarts == 0


def test_a_missing_or_wrong_model_names_the_fix(tmp_path):
    with pytest.raises(PolicyError, match="scripts/fetch-model.sh"):
        check_model_path(tmp_path / "nope.gguf")
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    with pytest.raises(PolicyError, match="not a GGUF file"):
        check_model_path(bad)


def test_outcome_classes_mask_infra_failures():
    rec = {"tests": 1, "total": 1}
    assert outcome_from({"rewardRecord": rec}, 1.0) == ("passed", None)
    assert outcome_from({"rewardRecord": {"tests": 0.3}}, 0.3)[0] == "failed"
    assert outcome_from({"rewardRecord": {"testError": {"kind": "timeout", "message": "pytest hung"}}}, 0.0)[0] == "verifier_error"
    assert outcome_from({}, 0.0)[0] == "environment_error"
    assert outcome_from({"outcome": {"class": "model_error", "cause": "x"}, "rewardRecord": rec}, 1.0) == ("model_error", "x")
