"""DepGPO for rLLM's own advantage step (rllm.trainer.common.advantage).

rLLM computes advantages on TrajectoryGroups and stores them on each Step (``step.advantage``, a
scalar broadcast over that step's response tokens). DepGPO fits that shape exactly: per trajectory,
Â_i from the group (same GRPO as the TypeScript core: sample std, no epsilon), then
Â_t = f_t / Z · Â_i for step t, with f and Z from env-server ``credit`` (stored by TbrlWorkflow on
``trajectory.info["depgpo"]``). Works on any objects with those attributes, so it is tested without rLLM.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable, Iterable

from .advantage import group_advantages, step_advantages

log = logging.getLogger("tbrl_bridge")


def apply_depgpo(groups: Iterable[Any], normalize_std: bool = True) -> dict:
    """Sets ``step.advantage`` for every step of every trajectory; returns counts for logging."""
    stats = {"trajectories": 0, "depgpo": 0, "fallback": 0}
    for group in groups:
        trajs = list(group.trajectories)
        rewards = [float(t.reward) if t.reward is not None else 0.0 for t in trajs]
        for traj, a_i in zip(trajs, group_advantages(rewards, normalize_std)):
            stats["trajectories"] += 1
            credit = (getattr(traj, "info", None) or {}).get("depgpo") or {}
            factors = credit.get("factors")
            z = credit.get("z")
            if isinstance(factors, list) and len(factors) == len(traj.steps) and isinstance(z, (int, float)) and z > 0:
                for step, adv in zip(traj.steps, step_advantages(factors, z, a_i)):
                    step.advantage = adv
                stats["depgpo"] += 1
            else:
                # No usable credit for this rollout (env-server credit missing, or steps do not line up): GRPO.
                for step in traj.steps:
                    step.advantage = a_i
                stats["fallback"] += 1
    return stats


def install_in_rllm() -> str | None:
    """Replaces rLLM's compute_advantage_from_trajectory_groups (in every module that imported it)
    with one that runs DepGPO. Returns why not when rLLM is absent."""
    try:
        import rllm.trainer.common.advantage as adv_mod  # type: ignore
    except Exception as err:
        return f"rLLM is not importable ({type(err).__name__}: {err})"
    original: Callable = adv_mod.compute_advantage_from_trajectory_groups
    if getattr(original, "_tbrl_depgpo", False):
        return None

    def depgpo_advantages(groups, algorithm_config, *args, **kwargs):
        normalize = bool(getattr(algorithm_config, "norm_adv_by_std_in_grpo", True))
        stats = apply_depgpo(groups, normalize)
        log.info("DepGPO advantages: %s", stats)

    depgpo_advantages._tbrl_depgpo = True  # type: ignore[attr-defined]
    # Trainer modules bind the function by name at import; patch every binding, not just the source.
    for mod in list(sys.modules.values()):
        # vars(), not getattr: a lazy module (transformers') would import everything it can name.
        if mod is not None and vars(mod).get("compute_advantage_from_trajectory_groups") is original:
            setattr(mod, "compute_advantage_from_trajectory_groups", depgpo_advantages)
    return None
