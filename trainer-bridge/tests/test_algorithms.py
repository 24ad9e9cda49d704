"""algorithms.json: every entry has its estimator module, and the callers follow the registry."""

from tbrl_bridge.advantage import StepFactors
from tbrl_bridge.algorithms import algorithm_names, algorithm_spec, default_algorithm, estimator, factor_estimators, uses_step_factors
from tbrl_bridge.presets import hydra_overrides, load_presets


def test_every_entry_has_an_estimator_module():
    assert algorithm_names() == ["grpo", "depgpo"]
    assert default_algorithm() == "grpo"
    for name in algorithm_names():
        mod = estimator(name)
        assert callable(mod.step_factors)
        assert isinstance(mod.step_factors([1.0, 0.0], [3, 1]), StepFactors)
        assert mod.VERL_FN is None or callable(mod.VERL_FN)


def test_step_factors_follow_the_entry():
    assert estimator("grpo").step_factors([1.0, 0.0, 1.0], [1, 2, 3]).factors == [1.0, 1.0, 1.0]
    dep = estimator("depgpo").step_factors([1.0, 0.0], [1, 1])
    assert dep.factors != [1.0, 1.0]
    assert uses_step_factors("depgpo") and not uses_step_factors("grpo") and not uses_step_factors(None)
    assert factor_estimators() == {"depgpo"}


def test_hydra_overrides_name_the_registered_verl_estimator():
    preset = load_presets()["test_8b_2_gpus"]
    for name in algorithm_names():
        assert f"algorithm.adv_estimator={algorithm_spec(name)['verlEstimator']}" in hydra_overrides(preset, "/d", name)
    # An unknown name falls back to the default estimator, as before the registry.
    assert "algorithm.adv_estimator=grpo" in hydra_overrides(preset, "/d", "ppo")
