"""Advantage estimators (algorithms.json, shared with the TypeScript client, as presets.json is).

An estimator is one entry in algorithms.json plus ``estimators/<name>.py`` here (``step_factors``
and ``VERL_FN``, the function registered with verl under ``verlEstimator``, or None when verl ships
it) plus one file under src/core/trainer/estimators/ on the TypeScript side.
"""

from __future__ import annotations

import importlib
import json
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Optional

ALGORITHMS_FILE = Path(__file__).with_name("algorithms.json")


@lru_cache(maxsize=1)
def load_algorithms() -> dict:
    return json.loads(ALGORITHMS_FILE.read_text(encoding="utf-8"))


def algorithm_names() -> list[str]:
    return list(load_algorithms())


def default_algorithm() -> str:
    return next(name for name, spec in load_algorithms().items() if spec.get("default"))


def algorithm_spec(name: str) -> dict:
    specs = load_algorithms()
    if name not in specs:
        raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(specs)}")
    return specs[name]


def estimator(name: str) -> ModuleType:
    """The estimator's Python module, ``tbrl_bridge.estimators.<name>``."""
    algorithm_spec(name)
    return importlib.import_module(f"{__package__}.estimators.{name}")


def uses_step_factors(name: Optional[str]) -> bool:
    """Whether the estimator scales advantages per step (its factors must reach verl / rLLM)."""
    return name in load_algorithms() and bool(load_algorithms()[name].get("stepFactors"))


def factor_estimators() -> set[str]:
    """verl estimator names whose per-token factors the bridge passes on (verl_glue.py)."""
    return {spec["verlEstimator"] for spec in load_algorithms().values() if spec.get("stepFactors")}


def register_all_with_verl() -> Optional[str]:
    """Registers every estimator of algorithms.json that brings its own function with verl's
    ``register_adv_est`` (the ones verl ships are there already). Returns why not when verl is absent.
    Registering twice is a no-op (verl refuses a different function under the same name)."""
    try:
        import torch  # noqa: F401
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est  # type: ignore
    except Exception as err:  # ImportError, or a broken CUDA install
        return f"verl is not importable ({type(err).__name__}: {err})"
    for name, spec in load_algorithms().items():
        fn = estimator(name).VERL_FN
        verl_name = spec["verlEstimator"]
        if fn is None:
            if verl_name not in ADV_ESTIMATOR_REGISTRY:
                return f"verl has no built-in estimator {verl_name!r} for {name}"
            continue
        if verl_name in ADV_ESTIMATOR_REGISTRY:
            continue
        try:
            register_adv_est(verl_name)(fn)
        except Exception as err:
            return f"verl refused the registration of {verl_name}: {err}"
    return None
