"""Where verl's interfaces and the studio meet: the DepGPO estimator inside verl's own advantage step.

verl 0.9.1's ``ray_trainer.compute_advantage`` hands a registered estimator only token_level_rewards,
response_mask, index and config, so per-token DepGPO factors would never reach it. ``install_in_verl``
registers ``depgpo`` and wraps ``compute_advantage`` (the module global ``RayPPOTrainer.fit`` calls)
so that for ``depgpo`` the factors the agent loop stored on each sample (``extra_fields`` →
``non_tensor_batch["depgpo_token_factors"]``, or a ``batch`` tensor of the same name) are passed on.
Every other estimator goes to verl's function untouched.
"""

from __future__ import annotations

from typing import Any, Optional

from .advantage import register_with_verl
from .algorithms import factor_estimators

FACTORS_KEY = "depgpo_token_factors"


def _name(adv_estimator: Any) -> str:
    return str(getattr(adv_estimator, "value", adv_estimator))


def token_factors_of(data) -> Optional[list]:
    """Per-token f_t/Z rows aligned with data.batch['responses'], or None when no sample has any."""
    if FACTORS_KEY in data.batch.keys():
        return data.batch[FACTORS_KEY].tolist()
    raw = data.non_tensor_batch.get(FACTORS_KEY)
    if raw is None:
        return None
    width = data.batch["response_mask"].shape[-1]
    rows = []
    for r in raw:
        r = list(r) if r is not None else []
        rows.append((r + [1.0] * width)[:width])
    return rows


def compute_advantage_depgpo(data, adv_estimator, *args, _verl_compute_advantage=None, **kwargs):
    from verl.trainer.ppo import core_algos  # type: ignore

    name = _name(adv_estimator)
    if name not in factor_estimators():
        return _verl_compute_advantage(data, adv_estimator, *args, **kwargs)
    if "response_mask" not in data.batch.keys():
        from verl.trainer.ppo.ray_trainer import compute_response_mask  # type: ignore

        data.batch["response_mask"] = compute_response_mask(data)
    fn = core_algos.get_adv_estimator_fn(name)
    index = data.non_tensor_batch.get("uid")
    advantages, returns = fn(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=data.batch["response_mask"],
        index=index,
        config=kwargs.get("config"),
        norm_adv_by_std_in_grpo=kwargs.get("norm_adv_by_std_in_grpo"),
        depgpo_token_factors=token_factors_of(data),
    )
    data.batch["advantages"] = advantages
    data.batch["returns"] = returns
    return data


# verl 0.9.1's V1 trainer (trainer.use_v1, the default) calls compute_advantage through
# verl.trainer.ppo.v1.utils, which imported the function by name; the legacy trainer through ray_trainer.
PATCHED_MODULES = ("verl.trainer.ppo.ray_trainer", "verl.trainer.ppo.v1.utils")


def install_in_verl() -> Optional[str]:
    """Registers the estimator and wraps verl's compute_advantage once in every module that calls it.
    Returns why not, or None."""
    import importlib

    why = register_with_verl()
    if why:
        return why
    from verl.trainer.ppo import ray_trainer  # type: ignore

    original = getattr(ray_trainer.compute_advantage, "_tbrl_original", ray_trainer.compute_advantage)

    def wrapped(data, adv_estimator, *args, **kwargs):
        return compute_advantage_depgpo(data, adv_estimator, *args, _verl_compute_advantage=original, **kwargs)

    wrapped._tbrl_original = original  # type: ignore[attr-defined]
    for name in PATCHED_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # the V1 module needs optional packages on some installs
            continue
        if getattr(mod, "compute_advantage", None) is not None and not hasattr(mod.compute_advantage, "_tbrl_original"):
            mod.compute_advantage = wrapped
    return None
